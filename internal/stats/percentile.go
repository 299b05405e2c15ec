// Package stats holds the one answer to "what is the p99": the latency
// percentiles that bench's summary, analyze's report, compare and the
// production view all print, with one failure policy.
//
// The policy (docs/analyze.md "Latency"): the error rate comes first, and a
// failed request counts as infinitely slow (+Inf) in every latency list, so
// a percentile that lands on a failure has no finite value (nil, printed as
// "failed" or null). Percentiles are nearest-rank: the smallest value with
// at least p% of the values at or below it (gonum's stat.Quantile with
// stat.Empirical), found by selection in O(n).
package stats

import (
	"math"
	"slices"

	"gonum.org/v1/gonum/stat"
)

// Percentiles of one latency figure, in seconds; nil where the percentile
// lands on a failed request (or there is no value).
type Percentiles struct {
	P50 *float64 `json:"p50"`
	P90 *float64 `json:"p90"`
	P95 *float64 `json:"p95"`
	P99 *float64 `json:"p99"`
}

// Failed is the value a failed request takes in a latency list.
var Failed = math.Inf(1)

// Percentile is the nearest-rank p-th percentile (0 < p ≤ 100) of the
// sorted values; NaN when there are none.
func Percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return math.NaN()
	}
	return stat.Quantile(p/100, stat.Empirical, sorted, nil)
}

// Of is the four percentiles of v, reordering v (no copy). With a NaN or a
// negative zero in v (whose place a selection leaves open) it sorts v.
func Of(v []float64) Percentiles {
	if len(v) == 0 {
		return Percentiles{}
	}
	if slices.ContainsFunc(v, unordered) {
		slices.Sort(v)
		f := func(p float64) *float64 { return Finite(Percentile(v, p)) }
		return Percentiles{P50: f(50), P90: f(90), P95: f(95), P99: f(99)}
	}
	lo := 0
	f := func(p float64) *float64 {
		k := RankIndex(p, len(v))
		SelectRank(v[lo:], k-lo)
		lo = k
		return Finite(v[k])
	}
	return Percentiles{P50: f(50), P90: f(90), P95: f(95), P99: f(99)}
}

// Median is the median of v (the mean of the two middle values when n is
// even), reordering v; NaN when v is empty.
func Median(v []float64) float64 {
	n := len(v)
	if n == 0 {
		return math.NaN()
	}
	if slices.ContainsFunc(v, unordered) {
		slices.Sort(v)
		if n%2 == 1 {
			return v[n/2]
		}
		return (v[n/2-1] + v[n/2]) / 2
	}
	SelectRank(v, n/2)
	if n%2 == 1 {
		return v[n/2]
	}
	// The largest value below the middle one.
	return (slices.Max(v[:n/2]) + v[n/2]) / 2
}

func unordered(x float64) bool { return x != x || x == 0 && math.Signbit(x) }

// RankIndex is the index in n sorted values of the nearest-rank p-th
// percentile as Percentile finds it: the first index i with i+1 ≥ p/100·n.
func RankIndex(p float64, n int) int {
	return min(n-1, max(0, int(math.Ceil(p/100*float64(n)))-1))
}

// SelectRank reorders v (no NaN) so that v[k] holds the value sorted v
// holds there, with no larger value before it and no smaller one after it:
// quickselect with a three-way partition (many equal values, such as the
// +Inf of failed requests, cost one pass).
func SelectRank(v []float64, k int) {
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

// Finite returns a pointer to v, or nil when v is NaN or ±Inf.
func Finite(v float64) *float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return &v
}

// OfSorted is Of of values already sorted, none NaN or −0: each
// percentile read at its rank.
func OfSorted(sorted []float64) Percentiles {
	if len(sorted) == 0 {
		return Percentiles{}
	}
	f := func(p float64) *float64 { return Finite(sorted[RankIndex(p, len(sorted))]) }
	return Percentiles{P50: f(50), P90: f(90), P95: f(95), P99: f(99)}
}
