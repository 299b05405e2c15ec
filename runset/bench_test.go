package runset

import (
	"fmt"
	"testing"
)

// go test -run '^$' -bench . -benchmem ./runset
func BenchmarkPareto(b *testing.B) {
	const n = 500
	runs := make([]*Run, n)
	for i := range runs {
		r := &Run{Name: fmt.Sprint(i)}
		r.Report.Valid = true
		r.Report.SteadyState.Reached = true
		x := float64(i)
		r.Report.SteadyState.JoulesPerToken = f64(x)
		r.Report.ThroughputTokensPerSecond = f64(x * x / n) // a long front with ties broken
		r.Report.Latency.TTFTSeconds.P95 = f64(float64((i * 7919) % n))
		runs[i] = r
	}
	b.ReportAllocs()
	for b.Loop() {
		Pareto(runs, ParetoMetrics)
	}
}
