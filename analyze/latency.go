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

// percentilesOf is percentiles reordering v itself (no copy). The four
// nearest-rank values are found by selection, O(n), rather than by sorting
// v: the value at a rank is the same either way. With a NaN (which
// percentile turns into NaN) or a negative zero (whose place among zeros
// a sort leaves open) in v it sorts, as before.
func percentilesOf(v []float64) Percentiles {
	if len(v) == 0 {
		return Percentiles{}
	}
	for _, x := range v {
		if x != x || x == 0 && math.Signbit(x) {
			slices.Sort(v)
			f := func(p float64) *float64 { return finite(percentile(v, p)) }
			return Percentiles{P50: f(50), P90: f(90), P95: f(95), P99: f(99)}
		}
	}
	lo := 0
	f := func(p float64) *float64 {
		k := rankIndex(p, len(v))
		selectRank(v[lo:], k-lo)
		lo = k
		return finite(v[k])
	}
	return Percentiles{P50: f(50), P90: f(90), P95: f(95), P99: f(99)}
}

// medianOf is median(v sorted), reordering v: by selection unless v holds
// a NaN or a negative zero (then sorted).
func medianOf(v []float64) float64 {
	n := len(v)
	if n == 0 || slices.ContainsFunc(v, func(x float64) bool { return x != x || x == 0 && math.Signbit(x) }) {
		slices.Sort(v)
		return median(v)
	}
	selectRank(v, n/2)
	if n%2 == 1 {
		return v[n/2]
	}
	// The largest value below the middle one.
	return (slices.Max(v[:n/2]) + v[n/2]) / 2
}

// rankIndex is the index in n sorted values of the nearest-rank p-th
// percentile as percentile (gonum's stat.Quantile, Empirical) finds it:
// the first index i with i+1 ≥ p/100·n.
func rankIndex(p float64, n int) int {
	return min(n-1, max(0, int(math.Ceil(p/100*float64(n)))-1))
}

// selectRank reorders v (no NaN) so that v[k] holds the value sorted v
// holds there, with no larger value before it and no smaller one after it:
// quickselect with a three-way partition (many equal values, such as the
// +Inf of failed requests, cost one pass).
func selectRank(v []float64, k int) {
	lo, hi := 0, len(v)
	for hi-lo > 16 {
		a, b, c := v[lo], v[lo+(hi-lo)/2], v[hi-1]
		p := max(min(a, b), min(max(a, b), c)) // median of three
		lt, i, gt := lo, lo, hi
		for i < gt {
			switch x := v[i]; {
			case x < p:
				v[lt], v[i] = v[i], v[lt]
				lt++
				i++
			case x > p:
				gt--
				v[gt], v[i] = v[i], v[gt]
			default:
				i++
			}
		}
		switch {
		case k < lt:
			hi = lt
		case k >= gt:
			lo = gt
		default:
			return
		}
	}
	slices.Sort(v[lo:hi])
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
