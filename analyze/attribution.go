package analyze

import (
	"cmp"
	"fmt"
	"math"
	"slices"
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
	tLo, tHi uint32 // the bits of t
	reqKind  uint32 // request index << 2 | kind
}

// maxEventReqs is the most requests an event can index.
const maxEventReqs = 1 << 30

func newEvent(t float64, req int, kind evKind) event {
	b := math.Float64bits(t)
	return event{tLo: uint32(b), tHi: uint32(b >> 32), reqKind: uint32(req)<<2 | uint32(kind)}
}

func (e event) t() float64 { return math.Float64frombits(uint64(e.tHi)<<32 | uint64(e.tLo)) }

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

// sweep is attribute's state: the sorted events, per request whether its
// tokens are spread over [first token, end] and at which rate, and the
// running sums.
type sweep struct {
	evs    []event
	rates  []float64
	tokens []bool
	out    attribution
	// Per request: A at its first token; B at its send is kept in its
	// Joules until its end.
	aFirst            []float64
	A, B, rateSum     float64
	active, producing int
}

// newSweep builds the events of the requests that overlap [from, to].
func newSweep(reqs []Request, from, to float64) *sweep {
	s := &sweep{rates: make([]float64, len(reqs)), tokens: make([]bool, len(reqs)), evs: make([]event, 0, 3*len(reqs))}
	for i := range reqs {
		r := &reqs[i]
		st, e := r.Send, r.End
		if e <= from || st >= to || !(e >= st) { // NaN: no span
			continue
		}
		send, end := max(st, from), min(e, to)
		s.evs = append(s.evs, newEvent(send, i, evSend), newEvent(end, i, evEnd))
		if r.HasTTFT && r.OutputTokens > 0 && r.End > r.FirstToken() && r.FirstToken() < to {
			s.tokens[i], s.rates[i] = true, float64(r.OutputTokens)/(r.End-r.FirstToken())
			s.evs = append(s.evs, newEvent(min(max(r.FirstToken(), send), end), i, evFirst))
		}
	}
	slices.SortFunc(s.evs, cmpEvents)
	s.out.Joules = make([]float64, len(reqs))
	s.aFirst = make([]float64, len(reqs))
	return s
}

// apply applies one event to the running sums.
func (s *sweep) apply(ev event) {
	req := ev.req()
	rate := s.rates[req]
	switch ev.kind() {
	case evSend:
		s.active++
		s.out.Joules[req] = s.B
	case evFirst:
		s.producing++
		s.rateSum += rate
		s.aFirst[req] = s.A
	case evEnd:
		s.active--
		j := 0.0
		if s.tokens[req] {
			s.producing--
			s.rateSum -= rate
			j += rate * (s.A - s.aFirst[req])
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
	ei := 0
	for {
		// Apply the events at x.
		for ei < len(s.evs) && s.evs[ei].t() <= x {
			s.apply(s.evs[ei])
			ei++
		}
		// The next boundary: the next event's time (later than x, as
		// every event at or before x is applied), else the domain's end.
		var next float64
		switch {
		case ei < len(s.evs):
			next = s.evs[ei].t()
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
