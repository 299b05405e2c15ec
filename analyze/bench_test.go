package analyze

import (
	"io"
	"runtime"
	"testing"
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
