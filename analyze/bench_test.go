package analyze

import (
	"context"
	"flag"
	"fmt"
	"io"
	"runtime"
	"testing"
	"time"

	"github.com/joulemark/joulemark/promserver"
)

// BenchmarkCompute1M is the scale target: 1M requests and 3 hours of 8 GPUs
// sampled at 10 Hz (target < 10 s, < 2 GB). Run it alone:
//
//	go test ./analyze -run '^$' -bench Compute1M -benchtime 1x -benchmem
//
// It reports the heap in use after Compute as heap-MB (the input data
// included).
func BenchmarkCompute1M(b *testing.B) {
	d := synthRun(1_000_000, 8, 3*3600, 10)
	p := DefaultParams()
	b.ResetTimer()
	var r *Report
	for b.Loop() {
		var err error
		r, _, err = Compute(d, p)
		if err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	b.ReportMetric(float64(ms.HeapInuse)/(1<<20), "heap-MB")
	if r.Requests.Started != 1_000_000 || !r.SteadyState.Reached {
		b.Fatalf("unexpected result: %d requests, steady state %v (%s)", r.Requests.Started, r.SteadyState.Reached, r.SteadyState.Reason)
	}
}

// BenchmarkHTML1M renders report.html for the same run (plots reduce every
// series to at most a few thousand points).
func BenchmarkHTML1M(b *testing.B) {
	d := synthRun(1_000_000, 8, 3*3600, 10)
	r, pd, err := Compute(d, DefaultParams())
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		if err := WriteHTML(io.Discard, r, pd); err != nil {
			b.Fatal(err)
		}
	}
}

var benchRequests = flag.Int("bench-requests", 100_000, "requests of BenchmarkAnalyzeTSDB's run (formal lasts requests/100 s)")

// BenchmarkAnalyzeTSDB is the whole path for a run of n requests and 8 GPUs
// at 10 Hz held in the in-process TSDB: the queries over HTTP, decoding,
// joining the per-request samples, and Compute.
//
//	go test ./analyze -run '^$' -bench AnalyzeTSDB -benchtime 1x -benchmem
func BenchmarkAnalyzeTSDB(b *testing.B) {
	for _, n := range []int{*benchRequests} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			d := synthRun(n, 8, float64(n)/100, 10)
			s, err := promserver.Start(context.Background(), promserver.Options{Dir: b.TempDir(), MaxSamples: 200_000_000})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			if err := s.AppendSamples(context.Background(), fixtureSamples(d)); err != nil {
				b.Fatal(err)
			}
			cfg := Config{PrometheusURL: s.URL(), RunID: d.RunID, Params: DefaultParams(), Now: fixtureNow().Add(time.Duration(n/100) * time.Second)}
			b.ResetTimer()
			for b.Loop() {
				r, _, err := Analyze(context.Background(), cfg)
				if err != nil {
					b.Fatal(err)
				}
				if r.Requests.Started != n {
					b.Fatalf("%d requests read back, want %d", r.Requests.Started, n)
				}
			}
		})
	}
}
