package analyze

import (
	"fmt"
	"math"
)

// windowCV returns, for every i in [0, len(x)−w], the coefficient of
// variation (population standard deviation / mean) of x[i:i+w], in O(n)
// from prefix sums. Values are shifted by their overall mean first so the
// sums of squares keep their precision. A window with mean ≤ 0 has CV +Inf.
func windowCV(x []float64, w int) []float64 {
	n := len(x)
	if w <= 0 || n < w {
		return nil
	}
	shift := 0.0
	for _, v := range x {
		shift += v
	}
	shift /= float64(n)
	s1 := make([]float64, n+1)
	s2 := make([]float64, n+1)
	for i, v := range x {
		d := v - shift
		s1[i+1] = s1[i] + d
		s2[i+1] = s2[i] + d*d
	}
	out := make([]float64, n-w+1)
	fw := float64(w)
	for i := range out {
		m := (s1[i+w] - s1[i]) / fw
		variance := (s2[i+w]-s2[i])/fw - m*m
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
// have CV < cvMax, and the largest of those windows' CVs. When there is none
// it returns -1, the reason and the largest window CV of the best start
// (NaN when there are too few requests for one).
func steadyStart(x []float64, w, k int, cvMax float64) (int, float64, string) {
	n := len(x)
	if n < w*k {
		return -1, math.NaN(), fmt.Sprintf("only %d successful formal requests with output tokens; %d windows of %d need %d", n, k, w, w*k)
	}
	cv := windowCV(x, w)
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
