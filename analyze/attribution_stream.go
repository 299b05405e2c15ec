package analyze

import "math"

// eventStream yields the send or first-token events of requests in
// completion order in cmpEvents' order without listing and sorting them
// all: a heap holds the events of the requests walked so far, and a
// request is walked once the heap's first event could come after its
// event. No event comes more than lead before its request's end (clamped
// to the domain), and the requests' clamped ends never decrease, so none
// of the requests not yet walked has an event before end − lead.
type eventStream struct {
	kind     evKind
	reqs     []Request
	from, to float64
	lead     float64
	next     int     // the first request with a span not yet walked
	heap     []event // walked, not yet applied: a heap in before's order
}

// newEventStream is the stream of kind's events (evSend or evFirst) of
// reqs over [from, to]; reqs' clamped ends must never decrease.
func newEventStream(kind evKind, reqs []Request, from, to float64) *eventStream {
	st := &eventStream{kind: kind, reqs: reqs, from: from, to: to}
	lead, maxEnd := 0.0, 0.0
	for i := range reqs {
		if e, ok := st.eventOf(i); ok {
			end := min(reqs[i].End, to)
			lead, maxEnd = max(lead, end-e.t()), max(maxEnd, math.Abs(end))
		}
	}
	// A margin for the rounding of end − lead: 1 ms, and far more than
	// an ulp of the largest end.
	st.lead = lead + 1e-3 + maxEnd*1e-12
	st.skip()
	return st
}

// eventOf is request i's event of the stream's kind, false without one.
func (st *eventStream) eventOf(i int) (event, bool) {
	r := &st.reqs[i]
	if !sweepSpan(r, st.from, st.to) {
		return event{}, false
	}
	send := max(r.Send, st.from)
	if st.kind == evSend {
		return newEvent(send, i, evSend), true
	}
	if !sweepTokens(r, st.to) {
		return event{}, false
	}
	return newEvent(min(max(r.FirstToken(), send), min(r.End, st.to)), i, evFirst), true
}

// skip moves next to the first request from next on with a span: only
// theirs are ordered by end.
func (st *eventStream) skip() {
	for st.next < len(st.reqs) && !sweepSpan(&st.reqs[st.next], st.from, st.to) {
		st.next++
	}
}

// head is the first event not yet applied, false when none is left.
func (st *eventStream) head() (event, bool) {
	for st.next < len(st.reqs) {
		if len(st.heap) > 0 && st.heap[0].t() < min(st.reqs[st.next].End, st.to)-st.lead {
			break
		}
		if e, ok := st.eventOf(st.next); ok {
			st.push(e)
		}
		st.next++
		st.skip()
	}
	if len(st.heap) == 0 {
		return event{}, false
	}
	return st.heap[0], true
}

func (st *eventStream) push(e event) {
	h := append(st.heap, e)
	for k := len(h) - 1; k > 0; {
		p := (k - 1) / 2
		if !h[k].before(h[p]) {
			break
		}
		h[k], h[p] = h[p], h[k]
		k = p
	}
	st.heap = h
}

// pop drops the first event, applied.
func (st *eventStream) pop() {
	h := st.heap
	n := len(h) - 1
	h[0] = h[n]
	h = h[:n]
	for k := 0; ; {
		c := 2*k + 1
		if c >= n {
			break
		}
		if c+1 < n && h[c+1].before(h[c]) {
			c++
		}
		if !h[c].before(h[k]) {
			break
		}
		h[k], h[c] = h[c], h[k]
		k = c
	}
	st.heap = h
}
