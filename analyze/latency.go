package analyze

import (
	"math"
	"slices"

	"gonum.org/v1/gonum/stat"
)

// percentile is the nearest-rank p-th percentile (0 < p ≤ 100) of the
// sorted values: the smallest value with at least p% of the values at or
// below it. Failed requests enter as +Inf (they never met any latency), so
// a percentile that lands on a failure is +Inf and is reported as null.
func percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return math.NaN()
	}
	return stat.Quantile(p/100, stat.Empirical, sorted, nil)
}

func percentiles(v []float64) Percentiles {
	return percentilesOf(slices.Clone(v))
}

// percentilesOf is percentiles sorting v itself (no copy).
func percentilesOf(v []float64) Percentiles {
	if len(v) == 0 {
		return Percentiles{}
	}
	slices.Sort(v)
	f := func(p float64) *float64 { return finite(percentile(v, p)) }
	return Percentiles{P50: f(50), P90: f(90), P95: f(95), P99: f(99)}
}

// finite returns a pointer to v, or nil when v is NaN or ±Inf.
func finite(v float64) *float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return &v
}

// tpot is (latency − TTFT)/(output tokens − 1); ok is false when the request
// has no TTFT or fewer than two output tokens.
func tpot(r Request) (float64, bool) {
	if !r.HasTTFT || r.OutputTokens < 2 {
		return 0, false
	}
	return (r.Latency - r.TTFT) / float64(r.OutputTokens-1), true
}
