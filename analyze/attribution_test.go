package analyze

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// constPower is one GPU drawing w watts, sampled every second over [from, to].
func constPower(w, from, to float64) []curve {
	var s []Sample
	for t := from; t <= to; t++ {
		s = append(s, Sample{t, w * (t - from)})
	}
	return []curve{newCurve(s, 2)}
}

func req(send, ttft, end float64, tokens int32, ok bool) Request {
	r := Request{Send: send, End: end, Latency: end - send, OutputTokens: tokens, Success: ok, Formal: true}
	if ttft >= 0 {
		r.HasTTFT, r.TTFT = true, ttft
	}
	return r
}

func TestAttribute(t *testing.T) {
	tests := []struct {
		name         string
		reqs         []Request
		want         []float64
		unattributed float64
	}{
		{
			// 100 W over [0,10]. A: active [0,5], 4 tokens over [1,5] (1/s).
			// B: active [2,7], 8 tokens over [3,7] (2/s).
			// [0,1] A alone, no tokens: A 100. [1,3] only A produces: A 200.
			// [3,5] A:B tokens 1:2: A 66.67, B 133.33. [5,7] B 200.
			// [7,10] nobody: 300 unattributed.
			name:         "overlapping requests",
			reqs:         []Request{req(0, 1, 5, 4, true), req(2, 1, 7, 8, true)},
			want:         []float64{100 + 200 + 200.0/3, 400.0/3 + 200},
			unattributed: 300,
		},
		{
			// C failed over [8,9]: it is active, no token anywhere, so it
			// takes [8,9] alone.
			name:         "failed request takes tokenless slice",
			reqs:         []Request{req(0, 1, 5, 4, true), req(2, 1, 7, 8, true), req(8, -1, 9, 0, false)},
			want:         []float64{100 + 200 + 200.0/3, 400.0/3 + 200, 100},
			unattributed: 200,
		},
		{
			// Two requests waiting for their first token share equally:
			// [0,1] both idle 50/50; [1,2] X produces, Y waits: X 100;
			// [2,3] both produce 1/s: 50/50; [3,4] Y alone.
			name:         "equal split without tokens",
			reqs:         []Request{req(0, 1, 3, 2, true), req(0, 2, 4, 2, true)},
			want:         []float64{50 + 100 + 50, 50 + 50 + 100},
			unattributed: 600,
		},
		{
			// A request sticking out of the domain only gets the part inside.
			name:         "clipped to domain",
			reqs:         []Request{req(-5, 0, 5, 10, true)},
			want:         []float64{500},
			unattributed: 500,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			at := attribute(tt.reqs, constPower(100, 0, 10), 0, 10)
			sum := at.Unattributed
			for i := range tt.want {
				if !near(at.Joules[i], tt.want[i]) {
					t.Errorf("request %d: %g J, want %g", i, at.Joules[i], tt.want[i])
				}
				sum += at.Joules[i]
			}
			if !near(at.Unattributed, tt.unattributed) {
				t.Errorf("unattributed %g, want %g", at.Unattributed, tt.unattributed)
			}
			if !near(sum, at.Total) || !near(at.Total, 1000) {
				t.Errorf("energy not conserved: attributed+unattributed %g, total %g, want 1000", sum, at.Total)
			}
		})
	}
}

// naiveAttribute is the O(n·slices) definition, to check the sweep.
func naiveAttribute(reqs []Request, curves []curve, from, to float64) []float64 {
	xs := []float64{from, to}
	for _, r := range reqs {
		xs = append(xs, r.Send, r.End)
		if r.HasTTFT {
			xs = append(xs, r.FirstToken())
		}
	}
	var ts []float64
	for _, x := range xs {
		if x >= from && x <= to {
			ts = append(ts, x)
		}
	}
	sortFloats(ts)
	cum := totalAt(curves, ts)
	out := make([]float64, len(reqs))
	for k := 0; k+1 < len(ts); k++ {
		a, b := ts[k], ts[k+1]
		if b <= a {
			continue
		}
		dE := cum[k+1] - cum[k]
		var active []int
		weights := make([]float64, len(reqs))
		wsum := 0.0
		for i, r := range reqs {
			if r.Send <= a && r.End >= b {
				active = append(active, i)
				if r.HasTTFT && r.OutputTokens > 0 && r.End > r.FirstToken() && r.FirstToken() <= a {
					weights[i] = float64(r.OutputTokens) / (r.End - r.FirstToken()) * (b - a)
					wsum += weights[i]
				}
			}
		}
		for _, i := range active {
			if wsum > 0 {
				out[i] += dE * weights[i] / wsum
			} else {
				out[i] += dE / float64(len(active))
			}
		}
	}
	return out
}

func sortFloats(x []float64) {
	for i := 1; i < len(x); i++ {
		for j := i; j > 0 && x[j] < x[j-1]; j-- {
			x[j], x[j-1] = x[j-1], x[j]
		}
	}
}

func TestAttributeMatchesNaive(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	// Varying power on two GPUs.
	var s1, s2 []Sample
	c1, c2 := 0.0, 0.0
	for t := 0.0; t <= 60; t += 0.5 {
		s1 = append(s1, Sample{t, c1})
		s2 = append(s2, Sample{t + 0.25, c2})
		c1 += 0.5 * (100 + 50*rng.Float64())
		c2 += 0.5 * (200 + 80*rng.Float64())
	}
	curves := []curve{newCurve(s1, 1), newCurve(s2, 1)}
	var reqs []Request
	for range 200 {
		send := rng.Float64() * 55
		lat := 0.2 + rng.Float64()*5
		reqs = append(reqs, drawnReq(rng, send, lat, rng.Float64()*lat, rng.Float64() > 0.1))
	}
	at := attribute(reqs, curves, 1, 58)
	want := naiveAttribute(reqs, curves, 1, 58)
	sum := at.Unattributed
	for i := range reqs {
		if !near(at.Joules[i], want[i]) && !(abs(at.Joules[i]-want[i]) < 1e-6) {
			t.Fatalf("request %d: sweep %g J, naive %g J", i, at.Joules[i], want[i])
		}
		sum += at.Joules[i]
	}
	if abs(sum-at.Total) > 1e-6 {
		t.Errorf("not conserved: %g vs %g", sum, at.Total)
	}
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

// TestEventBefore: before, on the events' keys, is cmpEvents' order, −0
// and +0 one time, and t gives back each event's time bit for bit.
func TestEventBefore(t *testing.T) {
	times := []float64{math.Inf(-1), -2, -1e-300, math.Copysign(0, -1), 0, 1e-300, 1, 1.7e9, math.Inf(1)}
	var evs []event
	for i, x := range times {
		for k := evSend; k <= evEnd; k++ {
			evs = append(evs, newEvent(x, i%3, k), newEvent(x, 5-i%3, k))
		}
	}
	for _, e := range evs {
		for _, f := range evs {
			if got, want := e.before(f), cmpEvents(e, f) < 0; got != want {
				t.Fatalf("(%v %d %d).before(%v %d %d) = %v, want %v", e.t(), e.kind(), e.req(), f.t(), f.kind(), f.req(), got, want)
			}
		}
	}
	for i, x := range times {
		if e := newEvent(x, i, evEnd); math.Float64bits(e.t()) != math.Float64bits(x) || e.req() != i || e.kind() != evEnd {
			t.Fatalf("newEvent(%v, %d, evEnd) gives back %v, %d, %d", x, i, e.t(), e.req(), e.kind())
		}
	}
}

// TestAttributeEndsWalked: requests in completion order, their ends
// walked in index order rather than listed and sorted, get the same
// joules, bit for bit, as when listed: ends on a coarse grid (ties across
// requests), ends past the domain (clamped to its end, tied), requests
// outside it (skipped), requests without a span out of end order, and
// failures without tokens.
func TestAttributeEndsWalked(t *testing.T) {
	defer func(on bool) { walkEnds = on }(walkEnds)
	rng := rand.New(rand.NewPCG(3, 4))
	var s1 []Sample
	c := 0.0
	for t := -5.0; t <= 70; t += 0.5 {
		s1 = append(s1, Sample{t, c})
		c += 0.5 * (100 + 50*rng.Float64())
	}
	curves := []curve{newCurve(s1, 1)}
	var reqs []Request
	for range 400 {
		send := float64(rng.IntN(260))/4 - 2
		lat := float64(1+rng.IntN(20)) / 4
		reqs = append(reqs, drawnReq(rng, send, lat, float64(rng.IntN(4))/8*lat, rng.IntN(8) > 0))
	}
	slices.SortStableFunc(reqs, func(a, b Request) int { return cmp.Compare(a.End, b.End) })
	// Requests without a span anywhere in the order: only those with one
	// are ordered by end.
	for _, q := range []Request{req(61, 0.5, 90, 5, true), req(-9, 0.5, -8, 5, true), req(40, -1, 30, 0, true)} {
		reqs = slices.Insert(reqs, rng.IntN(len(reqs)), q)
	}
	walkEnds = true
	walked := attribute(reqs, curves, 0, 60)
	walkEnds = false
	listed := attribute(reqs, curves, 0, 60)
	if walked.Total != listed.Total || walked.Unattributed != listed.Unattributed {
		t.Errorf("walked: total %v, unattributed %v; listed: %v, %v", walked.Total, walked.Unattributed, listed.Total, listed.Unattributed)
	}
	for i := range reqs {
		if math.Float64bits(walked.Joules[i]) != math.Float64bits(listed.Joules[i]) {
			t.Fatalf("request %d (%+v): walked %v J, listed %v J", i, reqs[i], walked.Joules[i], listed.Joules[i])
		}
	}
}

// drawnReq is a request sent at send, lat long: a success with ttft and
// up to 49 output tokens drawn from rng, or a failure without either.
func drawnReq(rng *rand.Rand, send, lat, ttft float64, ok bool) Request {
	if !ok {
		return req(send, -1, send+lat, 0, false)
	}
	return req(send, ttft, send+lat, int32(rng.IntN(50)), true)
}
