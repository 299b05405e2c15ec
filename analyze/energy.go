package analyze

import (
	"github.com/joulemark/joulemark/internal/stats"

	"math"
	"sort"
)

// curve is the reset-corrected cumulative energy of one counter series:
// c[k] is the energy from the first sample to t[k]. A decrease of the raw
// counter is a reset (exporter restart): the increase over that interval is
// the new raw value, as Prometheus' increase() counts it.
type curve struct {
	t, c []float64
	tol  float64 // how far past the first/last sample at() extrapolates
}

func newCurve(s []Sample, tol float64) curve {
	cv := curve{t: make([]float64, len(s)), c: make([]float64, len(s)), tol: tol}
	for k, p := range s {
		cv.t[k] = p.T
		if k == 0 {
			continue
		}
		d := p.V - s[k-1].V
		if d < 0 {
			d = p.V
		}
		cv.c[k] = cv.c[k-1] + d
	}
	return cv
}

// at is the cumulative energy at time x, interpolated linearly between the
// samples around x. Within tol outside the sampled range it extrapolates
// with the slope of the outermost interval; further out it clamps and
// reports ok=false.
func (cv curve) at(x float64) (v float64, ok bool) {
	n := len(cv.t)
	if n == 0 {
		return 0, false
	}
	if n == 1 {
		return cv.c[0], x == cv.t[0] || math.Abs(x-cv.t[0]) <= cv.tol
	}
	if x <= cv.t[0] {
		return cv.seg(0, x), cv.t[0]-x <= cv.tol
	}
	if x >= cv.t[n-1] {
		return cv.seg(n-2, x), x-cv.t[n-1] <= cv.tol
	}
	k := sort.SearchFloat64s(cv.t, x) // first t >= x
	if cv.t[k] == x {
		return cv.c[k], true
	}
	return cv.seg(k-1, x), true
}

// seg evaluates the line through samples k and k+1 at x; outside the sampled
// range by more than tol it clamps to the nearest sample.
func (cv curve) seg(k int, x float64) float64 {
	t0, t1, c0, c1 := cv.t[k], cv.t[k+1], cv.c[k], cv.c[k+1]
	n := len(cv.t)
	if x < cv.t[0]-cv.tol {
		return cv.c[0]
	}
	if x > cv.t[n-1]+cv.tol {
		return cv.c[n-1]
	}
	if t1 == t0 {
		return c0
	}
	return c0 + (c1-c0)*(x-t0)/(t1-t0)
}

// uncertainty bounds how far the linear interpolation at x can be from the
// true cumulative energy: with samples s0 < x < s1 and mean powers P on the
// intervals before, across and after, a power change anywhere in [s0, s1]
// moves the true value by at most (x-s0)(s1-x)/(s1-s0)·(max P − min P).
// At a sample, or outside the sampled range, it is 0.
func (cv curve) uncertainty(x float64) float64 {
	n := len(cv.t)
	k := sort.SearchFloat64s(cv.t, x) // first t >= x
	if n < 2 || k == 0 || k >= n || cv.t[k] == x {
		return 0
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, i := range []int{k - 2, k - 1, k} {
		if v, ok := cv.meanPower(i); ok {
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
	}
	if math.IsInf(lo, 0) {
		return 0
	}
	s0, s1 := cv.t[k-1], cv.t[k]
	return (x - s0) * (s1 - x) / (s1 - s0) * (hi - lo)
}

// bracket is the range a counter's true cumulative value at x lies in: a
// counter only rises, so between two samples it lies between their values,
// before the first sample it is at most the first's, after the last at
// least the last's (unbounded on the other side).
func (cv curve) bracket(x float64) (lo, hi float64) {
	n := len(cv.t)
	k := sort.SearchFloat64s(cv.t, x) // first t >= x
	switch {
	case n == 0:
		return math.Inf(-1), math.Inf(1)
	case k < n && cv.t[k] == x:
		return cv.c[k], cv.c[k]
	case k == 0:
		return math.Inf(-1), cv.c[0]
	case k == n:
		return cv.c[n-1], math.Inf(1)
	}
	return cv.c[k-1], cv.c[k]
}

// meanPower is the mean power over [t[i], t[i+1]].
func (cv curve) meanPower(i int) (float64, bool) {
	if i < 0 || i+1 >= len(cv.t) || cv.t[i+1] <= cv.t[i] {
		return 0, false
	}
	return (cv.c[i+1] - cv.c[i]) / (cv.t[i+1] - cv.t[i]), true
}

// powerAt is the mean power of the counter interval around x (the nearest
// interval outside the sampled range).
func (cv curve) powerAt(x float64) float64 {
	n := len(cv.t)
	if n < 2 {
		return 0
	}
	k := sort.SearchFloat64s(cv.t, x)
	k = max(1, min(k, n-1))
	p, _ := cv.meanPower(k - 1)
	return p
}

// between is the energy of one GPU over [a, b].
func (cv curve) between(a, b float64) (float64, bool) {
	ea, oka := cv.at(a)
	eb, okb := cv.at(b)
	return eb - ea, oka && okb
}

// totalCursor evaluates the sum of the curves at non-decreasing times, one
// position per curve carried from one time to the next: O(times + samples)
// over a sweep, without a slice of the times.
type totalCursor struct {
	curves []curve
	segs   []segCursor // one per curve
}

// segCursor is one curve's place in a totalCursor: its sample k, and the
// segment from sample ck to the next, as the common case of at reads it.
type segCursor struct {
	k, ck         int     // ck: the segment's first sample; −1 before one is loaded
	t0, t1, c0    float64 // the segment's times and its energy at t0
	dc, dt        float64 // c[ck+1] − c0 and t1 − t0, as every x in the segment scales and divides by them
	first, last   float64 // the curve's first and last times
	interpolating bool    // two samples or more and a tolerance (tol ≥ 0): the common case can apply
}

func newTotalCursor(curves []curve) *totalCursor {
	tc := &totalCursor{curves: curves, segs: make([]segCursor, len(curves))}
	for j := range curves {
		cv, s := &curves[j], &tc.segs[j]
		s.ck = -1
		if n := len(cv.t); n >= 2 && cv.tol >= 0 {
			s.interpolating, s.first, s.last = true, cv.t[0], cv.t[n-1]
		}
	}
	return tc
}

// load makes the segment from sample k the cursor's.
func (s *segCursor) load(cv *curve, k int) {
	s.ck, s.t0, s.t1, s.c0 = k, cv.t[k], cv.t[k+1], cv.c[k]
	s.dc, s.dt = cv.c[k+1]-s.c0, s.t1-s.t0
}

// at is the sum of the curves at x, added in curve order; x must not be
// less than at's previous x.
func (tc *totalCursor) at(x float64) float64 {
	sum := 0.0
	for j := range tc.segs {
		s := &tc.segs[j]
		if s.interpolating && x > s.first && x < s.last {
			// The common case, as the default case below: the segment
			// holding x, interpolated without seg's clamps, the same
			// operations on the same values.
			if s.ck != s.k || s.t1 < x {
				t, k := tc.curves[j].t, s.k
				for t[k+1] < x {
					k++
				}
				s.k = k
				s.load(&tc.curves[j], k)
			}
			if s.t1 == s.t0 {
				sum += s.c0
			} else {
				sum += s.c0 + s.dc*(x-s.t0)/s.dt
			}
			continue
		}
		if v, ok := tc.rare(j, x); ok {
			sum += v
		}
	}
	return sum
}

// rare is curve j's energy at x where at's common case does not apply:
// one sample, x outside the samples, or no tolerance; false without a
// sample (nothing to add).
func (tc *totalCursor) rare(j int, x float64) (float64, bool) {
	cv, s := &tc.curves[j], &tc.segs[j]
	n := len(cv.t)
	switch {
	case n == 0:
		return 0, false
	case n == 1:
		return cv.c[0], true
	case x <= cv.t[0]:
		return cv.seg(0, x), true
	case x >= cv.t[n-1]:
		return cv.seg(n-2, x), true
	}
	k := s.k
	for k+1 < n && cv.t[k+1] < x {
		k++
	}
	s.k = k
	return cv.seg(k, x), true
}

// medianInterval is the median distance between consecutive samples.
func medianInterval(s []Sample) float64 {
	if len(s) < 2 {
		return math.NaN()
	}
	d := make([]float64, len(s)-1)
	for k := 1; k < len(s); k++ {
		d[k-1] = s[k].T - s[k-1].T
	}
	return stats.Median(d)
}

// coverage returns the share of [from, to] that the series covers and its
// gaps. An interval between consecutive samples (or between a span edge and
// the nearest sample) longer than twice the median interval is uncovered
// over its whole length within the span.
func coverage(s []Sample, from, to, interval float64) (ratio float64, gaps [][2]float64) {
	span := to - from
	if span <= 0 {
		return 1, nil
	}
	if len(s) == 0 || math.IsNaN(interval) {
		return 0, [][2]float64{{from, to}}
	}
	thr := 2 * interval
	uncovered := 0.0
	add := func(a, b float64) {
		if b-a <= thr {
			return
		}
		a, b = max(a, from), min(b, to)
		if b > a {
			uncovered += b - a
			gaps = append(gaps, [2]float64{a, b})
		}
	}
	if s[0].T > from {
		add(from, s[0].T)
	}
	for k := 1; k < len(s); k++ {
		if s[k].T < from || s[k-1].T > to {
			continue
		}
		add(s[k-1].T, s[k].T)
	}
	if last := s[len(s)-1].T; last < to {
		add(last, to)
	}
	return 1 - uncovered/span, gaps
}
