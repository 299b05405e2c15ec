package remoteread_test

import (
	"context"
	"errors"
	"math"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/common/config"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/value"

	"github.com/joulemark/joulemark/internal/promserver"
	"github.com/joulemark/joulemark/internal/remoteread"
	"github.com/joulemark/joulemark/internal/remotewrite"
)

// TestRead reads a series back from the in-process TSDB: the window is
// open on the left and closed on the right, a staleness marker is dropped,
// series and labels are as stored, and a selector matches as in PromQL.
func TestRead(t *testing.T) {
	s, err := promserver.Start(context.Background(), promserver.Options{Dir: filepath.Join(t.TempDir(), "tsdb")})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	base := time.Now().Add(-time.Hour).UnixMilli() / 1000 * 1000
	var samples []remotewrite.Sample
	for k := range 10 {
		v := float64(k)
		if k == 5 {
			v = math.Float64frombits(value.StaleNaN)
		}
		for _, gpu := range []string{"0", "1"} {
			samples = append(samples, remotewrite.Sample{Labels: map[string]string{"__name__": "m", "gpu": gpu}, Value: v, TimestampMs: base + int64(k)*1000})
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := s.AppendSamples(ctx, samples); err != nil {
		t.Fatal(err)
	}
	r, err := remoteread.New(s.URL(), config.HTTPClientConfig{}, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	// (base+2 s, base+8 s]: 3..8 without the stale 5.
	m, err := r.Read(ctx, `m{gpu="1"}`, base+2000, base+8000)
	if err != nil {
		t.Fatal(err)
	}
	if len(m) != 1 || m[0].Metric["gpu"] != "1" || m[0].Metric[model.MetricNameLabel] != "m" {
		t.Fatalf("series %v, want m{gpu=\"1\"} alone", m)
	}
	var got []float64
	for _, p := range m[0].Values {
		got = append(got, float64(p.Value))
	}
	want := []float64{3, 4, 6, 7, 8}
	if len(got) != len(want) {
		t.Fatalf("values %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("values %v, want %v", got, want)
		}
	}
	if m, err := r.Read(ctx, `m{gpu=~"0|1"}`, base-1, base+9000); err != nil || len(m) != 2 || len(m[0].Values) != 9 {
		t.Fatalf("both series: %v, err %v", m, err)
	}
	// Read's series own their samples (Each reuses one buffer).
	if m, err := r.Read(ctx, `m{gpu=~"0|1"}`, base-1, base+9000); err != nil || len(m) != 2 || &m[0].Values[0] == &m[1].Values[0] {
		t.Fatalf("both series share a buffer: %v, err %v", m, err)
	}
	// An error of Each's f ends the read after the first series.
	stop, calls := errors.New("stop"), 0
	if err := r.Each(ctx, `m{gpu=~"0|1"}`, base-1, base+9000, func(model.Metric, []model.SamplePair) error { calls++; return stop }); !errors.Is(err, stop) || calls != 1 {
		t.Fatalf("Each after f's error: err %v, %d calls, want %v and 1", err, calls, stop)
	}
	if _, err := r.Read(ctx, `m{gpu=`, base, base+1); err == nil {
		t.Fatal("a bad selector read without error")
	}
	if err := remoteread.ValidMode("grpc"); err == nil {
		t.Fatal("read API grpc accepted")
	}
}
