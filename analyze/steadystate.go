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
	s0 := make([]float64, n+1)
	s1 := make([]float64, n+1)
	s2 := make([]float64, n+1)
	for i, v := range x {
		d, q := v-shift, weight(i)
		s0[i+1] = s0[i] + q
		s1[i+1] = s1[i] + q*d
		s2[i+1] = s2[i] + q*d*d
	}
	out := make([]float64, n-w+1)
	for i := range out {
		sw := s0[i+w] - s0[i]
		if !(sw > 0) {
			out[i] = math.Inf(1)
			continue
		}
		m := (s1[i+w] - s1[i]) / sw
		variance := (s2[i+w]-s2[i])/sw - m*m
		mean := shift + m
		if mean <= 0 {
			out[i] = math.Inf(1)
			continue
		}
		out[i] = math.Sqrt(max(variance, 0)) / mean
	}
	return out
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
