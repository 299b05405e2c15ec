package promserver

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/joulemark/joulemark/internal/remotewrite"
)

// BenchmarkRemoteWriteIngest measures the receiver: one op is one remote-write
// request of 2000 samples (100 series x 20 samples, the writer's default
// batch) over loopback HTTP into the TSDB. Encoding is not timed.
//
//	go test -run '^$' -bench RemoteWriteIngest -benchtime 2000x ./promserver
func BenchmarkRemoteWriteIngest(b *testing.B) {
	const series, perSeries = 100, 20
	s, err := Start(context.Background(), Options{Dir: filepath.Join(b.TempDir(), "tsdb")})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	client := &http.Client{Timeout: 10 * time.Second}
	t0 := time.Now().Add(-time.Hour).UnixMilli()
	batch := make([]remotewrite.Sample, 0, series*perSeries)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		batch = batch[:0]
		for ser := range series {
			for k := range perSeries {
				batch = append(batch, remotewrite.Sample{
					Labels: map[string]string{
						"__name__": "joulemark_gpu_power_watts", "gpu": fmt.Sprint(ser % 8), "uuid": fmt.Sprint("GPU-", ser),
					},
					Value:       float64(i*perSeries + k),
					TimestampMs: t0 + int64(i*perSeries+k)*100, // 10 Hz
				})
			}
		}
		body, err := remotewrite.Encode(batch)
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		req, _ := http.NewRequest(http.MethodPost, s.RemoteWriteURL(), bytes.NewReader(body))
		req.Header.Set("Content-Encoding", "snappy")
		req.Header.Set("Content-Type", "application/x-protobuf")
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			b.Fatalf("status %d", resp.StatusCode)
		}
	}
	b.ReportMetric(float64(b.N*series*perSeries)/b.Elapsed().Seconds(), "samples/s")
}

// BenchmarkAppendSamples measures the fixture loader: one op appends 48000
// samples (8 GPUs at 10 Hz for 10 minutes) to a fresh series set.
//
//	go test -run '^$' -bench AppendSamples -benchtime 20x ./promserver
func BenchmarkAppendSamples(b *testing.B) {
	const gpus, n = 8, 6000
	s, err := Start(context.Background(), Options{Dir: filepath.Join(b.TempDir(), "tsdb")})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	t0 := time.Now().Add(-time.Hour).UnixMilli()
	samples := make([]remotewrite.Sample, 0, gpus*n)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		samples = samples[:0]
		for g := range gpus {
			lbls := map[string]string{"__name__": "joulemark_gpu_energy_joules_total", "gpu": fmt.Sprint(g), "run": fmt.Sprint(i)}
			for k := range n {
				samples = append(samples, remotewrite.Sample{Labels: lbls, Value: float64(k), TimestampMs: t0 + int64(k)*100})
			}
		}
		b.StartTimer()
		if err := s.AppendSamples(context.Background(), samples); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*gpus*n)/b.Elapsed().Seconds(), "samples/s")
}
