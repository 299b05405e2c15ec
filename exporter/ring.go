package exporter

import (
	"math"
	"sort"
)

// point is one retained sample of one GPU: t is nanoseconds since the
// exporter's start (monotonic), p the power, e the exporter's cumulative
// energy at t.
type point struct {
	t int64
	p float64
	e float64
}

// ring keeps the most recent points of one GPU in a fixed-size buffer.
type ring struct {
	buf   []point
	start int // index of the oldest point
	n     int
}

func newRing(capacity int) *ring { return &ring{buf: make([]point, max(capacity, 2))} }

// at returns the k-th oldest point.
func (r *ring) at(k int) point { return r.buf[(r.start+k)%len(r.buf)] }

func (r *ring) push(p point) {
	if r.n < len(r.buf) {
		r.buf[(r.start+r.n)%len(r.buf)] = p
		r.n++
		return
	}
	r.buf[r.start] = p
	r.start = (r.start + 1) % len(r.buf)
}

// search returns the index of the last point with time ≤ t, or -1.
func (r *ring) search(t int64) int {
	return sort.Search(r.n, func(k int) bool { return r.at(k).t > t }) - 1
}

// energyAt is the cumulative energy at t: linear interpolation of the
// counter-derived energy (counter), or trapezoid integration up to t with
// power linearly interpolated at t (integrated). ok is false when t is after
// the newest point; t before the oldest point takes the oldest point's energy
// (exact before the first sample ever, an approximation once history was
// overwritten).
func (r *ring) energyAt(t int64, counter bool) (e float64, ok bool) {
	if r.n == 0 {
		return 0, false
	}
	k := r.search(t)
	if k < 0 {
		return r.at(0).e, true
	}
	a := r.at(k)
	if a.t == t {
		return a.e, true
	}
	if k == r.n-1 {
		return 0, false
	}
	b := r.at(k + 1)
	f := float64(t-a.t) / float64(b.t-a.t)
	if counter {
		return a.e + (b.e-a.e)*f, true
	}
	pt := a.p + (b.p-a.p)*f
	return a.e + (a.p+pt)/2*float64(t-a.t)/1e9, true
}

// meanPower is the mean of the power samples with from < t ≤ to, and how
// many there are.
func (r *ring) meanPower(from, to int64) (mean float64, n int) {
	hi := r.search(to)
	sum := 0.0
	for k := hi; k >= 0; k-- {
		pt := r.at(k)
		if pt.t <= from {
			break
		}
		sum += pt.p
		n++
	}
	if n == 0 {
		return math.NaN(), 0
	}
	return sum / float64(n), n
}
