package analyze

import (
	"fmt"
	"math"
)

// windowCV returns, for every i in [0, len(x)−w], the coefficient of
// variation (population standard deviation / mean) of x[i:i+w], in O(n)
// from prefix sums. A window with mean ≤ 0 has CV +Inf.
func windowCV(x []float64, w int) []float64 {
	return weightedWindowCV(x, nil, w)
}

// weightedWindowCV is windowCV with weights wt (nil: all 1): the weighted
// mean Σwx/Σw and the weighted population variance Σw(x−m)²/Σw. Values are
// shifted by their overall mean first so the sums of squares keep their
// precision. A window with mean ≤ 0 or no weight has CV +Inf.
func weightedWindowCV(x, wt []float64, w int) []float64 {
	n := len(x)
	if w <= 0 || n < w || (wt != nil && len(wt) != n) {
		return nil
	}
	weight := func(i int) float64 {
		if wt == nil {
			return 1
		}
		return wt[i]
	}
	shift := 0.0
	for _, v := range x {
		shift += v
	}
	shift /= float64(n)
	// The prefix sums of weight, weight·d and weight·d² at the window's
	// end (lead) and start (lag): each walks the same sums in the same
	// order, so a window's sums are prefix differences without the
	// prefix arrays.
	var lead, lag prefixSums
	for i := range w {
		lead.add(x[i]-shift, weight(i))
	}
	out := make([]float64, n-w+1)
	for i := range out {
		if i > 0 {
			lag.add(x[i-1]-shift, weight(i-1))
			lead.add(x[i+w-1]-shift, weight(i+w-1))
		}
		out[i] = cvOfSums(lead.s0-lag.s0, lead.s1-lag.s1, lead.s2-lag.s2, shift)
	}
	return out
}

// prefixSums are running sums of weights q, q·d and q·d².
type prefixSums struct{ s0, s1, s2 float64 }

func (p *prefixSums) add(d, q float64) {
	p.s0, p.s1, p.s2 = p.s0+q, p.s1+q*d, p.s2+q*d*d
}

// cvOfSums is the CV of a window from its sums of weights sw, of q·d and
// of q·d² (d: the value less shift): +Inf without weight or with a mean ≤ 0.
func cvOfSums(sw, s1, s2, shift float64) float64 {
	if !(sw > 0) {
		return math.Inf(1)
	}
	m := s1 / sw
	variance := s2/sw - m*m
	mean := shift + m
	if mean <= 0 {
		return math.Inf(1)
	}
	return math.Sqrt(max(variance, 0)) / mean
}

// steadyStart finds the first request i at which k consecutive
// non-overlapping windows of w requests, [i, i+w), …, [i+(k−1)w, i+kw), all
// have CV < cvMax (weighted by wt, nil: unweighted), and the largest of
// those windows' CVs. When there is none it returns -1, the reason and the
// largest window CV of the best start (NaN when there are too few requests
// for one).
func steadyStart(x, wt []float64, w, k int, cvMax float64) (int, float64, string) {
	n := len(x)
	if n < w*k {
		return -1, math.NaN(), fmt.Sprintf("only %d successful formal requests with output tokens; %d windows of %d need %d", n, k, w, w*k)
	}
	cv := weightedWindowCV(x, wt, w)
	bestWorst, bestAt := math.Inf(1), -1
	for i := 0; i+w*k <= n; i++ {
		worst := 0.0
		for j := 0; j < k; j++ {
			worst = max(worst, cv[i+j*w])
		}
		if worst < cvMax {
			return i, worst, ""
		}
		if worst < bestWorst {
			bestWorst, bestAt = worst, i
		}
	}
	return -1, bestWorst, fmt.Sprintf("no %d consecutive windows of %d requests with CV < %g; the best start, request %d, has a window with CV %.4f", k, w, cvMax, bestAt, bestWorst)
}
