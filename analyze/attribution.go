package analyze

import (
	"cmp"
	"fmt"
	"math"
	"sync"
)

// attribution is the per-request split of GPU energy (docs/design.md,
// "Definitions", per-request energy).
type attribution struct {
	Joules       []float64 // per request, same order as the input
	Unattributed float64   // energy in slices with no active request
	Total        float64   // energy over the whole domain
}

type evKind uint8

const (
	evSend evKind = iota
	evFirst
	evEnd
)

// event is one request's send, first token or end at time t: 12 bytes
// (16 with a float64 field, for its alignment), three per request, sorted.
type event struct {
	kLo, kHi uint32 // orderKey(t): the sorts read it as it is
	reqKind  uint32 // request index << 2 | kind
}

// maxEventReqs is the most requests an event can index.
const maxEventReqs = 1 << 30

func newEvent(t float64, req int, kind evKind) event {
	k := orderKey(t)
	return event{kLo: uint32(k), kHi: uint32(k >> 32), reqKind: uint32(req)<<2 | uint32(kind)}
}

// key is orderKey(t): the order of the times, −0 before +0 (never NaN).
func (e event) key() uint64 { return uint64(e.kHi)<<32 | uint64(e.kLo) }

func (e event) t() float64 { return fromOrderKey(e.key()) }

// before says whether e comes before f in cmpEvents' order, from the keys:
// −0 and +0 are one time there.
func (e event) before(f event) bool {
	ek, fk := sameZero(e.key()), sameZero(f.key())
	if ek != fk {
		return ek < fk
	}
	if e.kind() != f.kind() {
		return e.kind() < f.kind()
	}
	return e.req() < f.req()
}

// sameZero maps orderKey(−0) to orderKey(+0), its neighbour.
func sameZero(k uint64) uint64 {
	if k == 1<<63-1 {
		return 1 << 63
	}
	return k
}

func (e event) req() int { return int(e.reqKind >> 2) }

func (e event) kind() evKind { return evKind(e.reqKind & 3) }

// cmpEvents orders events by time, then kind (send, first token, end),
// then request: a total order, so the sweep's float sums do not depend on
// the sort algorithm.
func cmpEvents(a, b event) int {
	if c := cmp.Compare(a.t(), b.t()); c != 0 {
		return c
	}
	if c := cmp.Compare(a.kind(), b.kind()); c != 0 {
		return c
	}
	return cmp.Compare(a.req(), b.req())
}

// attribute splits the energy of the summed curves over [from, to] among the
// requests. A request is active over [send, end]; its output tokens are
// spread uniformly over [first token, end] (rate r = tokens/(end−first)).
// In each slice between consecutive event times, the slice energy goes to
// active requests in proportion to their tokens in the slice, i.e. to r;
// when no active request produces a token, equally among active requests;
// with no active request it is unattributed.
//
// It runs in O(n log n + samples): instead of visiting every active request
// in every slice it keeps two running sums over the sweep,
//
//	A = Σ slice energy / Σ rates   (slices where some request produces tokens)
//	B = Σ slice energy / #active   (slices where none does)
//
// and a request's share is r·(A(end) − A(first)) + (B(end) − B(send)): in a
// token slice a request gets r/Σr of the energy (0 before its first token),
// in a tokenless slice 1/#active.
func attribute(reqs []Request, curves []curve, from, to float64) attribution {
	if len(reqs) > maxEventReqs {
		panic(fmt.Sprintf("attribute: %d requests, at most %d", len(reqs), maxEventReqs))
	}
	s := newSweep(reqs, from, to)
	return s.run(curves, from, to)
}

// sweep is attribute's state: the events, the requests they index and
// the running sums.
type sweep struct {
	// evs are the sends, then the first tokens, then the ends, each kind
	// sorted by time then request; the sweep merges the three. The ends
	// of requests listed in completion order are not listed: ends walks
	// the requests instead.
	evs  [3][]event
	ends endWalk
	reqs []Request
	to   float64
	out  attribution
	// Per request: A at its first token; B at its send is kept in its
	// Joules until its end.
	aFirst            []float64
	A, B, rateSum     float64
	active, producing int
}

// walkEnds lets newSweep walk the ends of requests in completion order
// (a variable for tests, which list them to compare).
var walkEnds = true

// endWalk yields the end events of requests that are in completion order
// (their ends, clamped to the domain, never decrease), walking them in
// index order, which is cmpEvents' order of their ends.
type endWalk struct {
	on       bool
	next     int   // the first request whose end is not yet applied
	head     event // its end event, when ok
	ok       bool
	from, to float64
}

// newSweep builds the events of the requests that overlap [from, to].
func newSweep(reqs []Request, from, to float64) *sweep {
	s := &sweep{reqs: reqs, to: to}
	spans, firsts := 0, 0
	inOrder, last := walkEnds, math.Inf(-1)
	for i := range reqs {
		if r := &reqs[i]; sweepSpan(r, from, to) {
			spans++
			if sweepTokens(r, to) {
				firsts++
			}
			end := min(r.End, to)
			inOrder = inOrder && !(end < last)
			last = end
		}
	}
	ends := 0
	if !inOrder {
		ends = spans
	}
	all := make([]event, 0, spans+firsts+ends)
	s.evs = [3][]event{all[:0:spans], all[spans : spans : spans+firsts], all[spans+firsts : spans+firsts : spans+firsts+ends]}
	for i := range reqs {
		r := &reqs[i]
		if !sweepSpan(r, from, to) {
			continue
		}
		send, end := max(r.Send, from), min(r.End, to)
		s.evs[evSend] = append(s.evs[evSend], newEvent(send, i, evSend))
		if !inOrder {
			s.evs[evEnd] = append(s.evs[evEnd], newEvent(end, i, evEnd))
		}
		if sweepTokens(r, to) {
			s.evs[evFirst] = append(s.evs[evFirst], newEvent(min(max(r.FirstToken(), send), end), i, evFirst))
		}
	}
	// Each kind by time, then request, as cmpEvents orders them: the
	// sends and first tokens beside each other.
	var g sync.WaitGroup
	for k := range s.evs {
		// By orderKey, which floatKey's order refines (−0 before +0):
		// the runs of equal times are the same.
		g.Go(func() {
			radixSortBy(s.evs[k], event.key)
			sortRuns(s.evs[k], func(a, b event) bool { return a.t() == b.t() }, cmpEvents)
		})
	}
	g.Wait()
	if inOrder {
		s.ends = endWalk{on: true, from: from, to: to}
		s.ends.seek(reqs, 0)
	}
	s.out.Joules = make([]float64, len(reqs))
	s.aFirst = make([]float64, len(reqs))
	return s
}

// seek moves the walk to the first request from i on with a span.
func (w *endWalk) seek(reqs []Request, i int) {
	for i < len(reqs) && !sweepSpan(&reqs[i], w.from, w.to) {
		i++
	}
	w.next, w.ok = i, i < len(reqs)
	if w.ok {
		w.head = newEvent(min(reqs[i].End, w.to), i, evEnd)
	}
}

// sweepSpan says whether request r overlaps [from, to] with a span.
func sweepSpan(r *Request, from, to float64) bool {
	return r.End > from && r.Send < to && r.End >= r.Send // NaN: no span
}

// sweepTokens says whether a request with a span spreads tokens over
// [first token, end].
func sweepTokens(r *Request, to float64) bool {
	return r.HasTTFT && r.OutputTokens > 0 && r.End > r.FirstToken() && r.FirstToken() < to
}

// rate is the rate at which request r, spreading tokens (sweepTokens),
// produces them over [first token, end].
func rate(r *Request) float64 { return float64(r.OutputTokens) / (r.End - r.FirstToken()) }

// head is the first event not yet applied of kind k, false when none is
// left.
func (s *sweep) head(k evKind) (event, bool) {
	if k == evEnd && s.ends.on {
		return s.ends.head, s.ends.ok
	}
	if len(s.evs[k]) == 0 {
		return event{}, false
	}
	return s.evs[k][0], true
}

// pop drops the first event of kind k, applied.
func (s *sweep) pop(k evKind) {
	if k == evEnd && s.ends.on {
		s.ends.seek(s.reqs, s.ends.next+1)
		return
	}
	s.evs[k] = s.evs[k][1:]
}

// next is the first event not yet applied in cmpEvents' order (the three
// kinds merged), false when none is left.
func (s *sweep) next() (event, bool) {
	found := false
	var best event
	for k := range evKind(len(s.evs)) {
		if e, ok := s.head(k); ok && (!found || e.before(best)) {
			found, best = true, e
		}
	}
	return best, found
}

// apply applies one event to the running sums.
func (s *sweep) apply(ev event) {
	req := ev.req()
	r := &s.reqs[req]
	switch ev.kind() {
	case evSend:
		s.active++
		s.out.Joules[req] = s.B
	case evFirst:
		s.producing++
		s.rateSum += rate(r)
		s.aFirst[req] = s.A
	case evEnd:
		s.active--
		j := 0.0
		if sweepTokens(r, s.to) {
			rt := rate(r)
			s.producing--
			s.rateSum -= rt
			j += rt * (s.A - s.aFirst[req])
		}
		j += s.B - s.out.Joules[req] // B at its send
		s.out.Joules[req] = j
	}
	if s.producing == 0 {
		s.rateSum = 0 // no drift from adding and removing rates
	}
}

// run sweeps the slices between consecutive boundaries: the domain edges
// and every event time. The summed curves are evaluated at each boundary
// as the sweep reaches it.
func (s *sweep) run(curves []curve, from, to float64) attribution {
	tc := newTotalCursor(curves)
	x := from
	cum := tc.at(x)
	cum0 := cum
	for {
		// Apply the events at x.
		ev, ok := s.next()
		for ; ok && ev.t() <= x; ev, ok = s.next() {
			s.apply(ev)
			s.pop(ev.kind())
		}
		// The next boundary: the next event's time (later than x, as
		// every event at or before x is applied), else the domain's end.
		var next float64
		switch {
		case ok:
			next = ev.t()
		case to > x:
			next = to
		default:
			s.out.Total = cum - cum0
			return s.out
		}
		nextCum := tc.at(next)
		dE := nextCum - cum
		switch {
		case s.active == 0:
			s.out.Unattributed += dE
		case s.producing > 0:
			s.A += dE / s.rateSum
		default:
			s.B += dE / float64(s.active)
		}
		x, cum = next, nextCum
	}
}
