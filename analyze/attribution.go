package analyze

import (
	"fmt"
	"math"
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
	// Per request, whether its tokens are spread over [first token, end]
	// and at which rate.
	if len(reqs) > maxEventReqs {
		panic(fmt.Sprintf("attribute: %d requests, at most %d", len(reqs), maxEventReqs))
	}
	rates, tokens := make([]float64, len(reqs)), make([]bool, len(reqs))
	evs := make([]event, 0, 3*len(reqs))
	for i := range reqs {
		r := &reqs[i]
		s, e := r.Send, r.End
		if e <= from || s >= to || !(e >= s) { // NaN: no span
			continue
		}
		send, end := max(s, from), min(e, to)
		evs = append(evs, newEvent(send, i, evSend), newEvent(end, i, evEnd))
		if r.HasTTFT && r.OutputTokens > 0 && r.End > r.FirstToken && r.FirstToken < to {
			tokens[i], rates[i] = true, float64(r.OutputTokens)/(r.End-r.FirstToken)
			evs = append(evs, newEvent(min(max(r.FirstToken, send), end), i, evFirst))
		}
	}
	sortEvents(evs)

	var out attribution
	out.Joules = make([]float64, len(reqs))
	// Per request: A at its first token; B at its send is kept in its
	// Joules until its end.
	aFirst := make([]float64, len(reqs))

	// The slices lie between consecutive boundaries: the domain edges and
	// every event time. The summed curves are evaluated at each boundary
	// as the sweep reaches it.
	tc := newTotalCursor(curves)
	x := from
	cum := tc.at(x)
	cum0 := cum
	var A, B, rateSum float64
	active, producing := 0, 0
	ei := 0
	for {
		// Apply the events at x.
		for ei < len(evs) && evs[ei].t() <= x {
			req := evs[ei].req()
			rate := rates[req]
			switch evs[ei].kind() {
			case evSend:
				active++
				out.Joules[req] = B
			case evFirst:
				producing++
				rateSum += rate
				aFirst[req] = A
			case evEnd:
				active--
				j := 0.0
				if tokens[req] {
					producing--
					rateSum -= rate
					j += rate * (A - aFirst[req])
				}
				j += B - out.Joules[req] // B at its send
				out.Joules[req] = j
			}
			if producing == 0 {
				rateSum = 0 // no drift from adding and removing rates
			}
			ei++
		}
		// The next boundary: the next event's time (later than x, as
		// every event at or before x is applied), else the domain's end.
		var next float64
		switch {
		case ei < len(evs):
			next = evs[ei].t()
		case to > x:
			next = to
		default:
			out.Total = cum - cum0
			return out
		}
		nextCum := tc.at(next)
		dE := nextCum - cum
		switch {
		case active == 0:
			out.Unattributed += dE
		case producing > 0:
			A += dE / rateSum
		default:
			B += dE / float64(active)
		}
		x, cum = next, nextCum
	}
}
