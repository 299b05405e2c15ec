package analyze

import (
	"strings"
	"testing"
)

// drainRun is a closed loop of n requests on c slots at constant power:
// every request 1 s and 10 tokens, slot s offset by s/c s; once the last
// request is sent the loop drains and the last requests share the power
// with fewer others, so their J/token rises.
func drainRun(n, c int) *RunData {
	b := fixtureBase
	d := &RunData{RunID: "drain", Phases: map[string]PhaseBounds{}, PhaseEnergy: map[string]float64{}}
	end := b
	for k := range n {
		s, round := k%c, k/c
		send := b + float64(s)/float64(c) + float64(round)
		d.Requests = append(d.Requests, Request{Formal: true, SlotRank: int32(s), Send: send, End: send + 1, HasTTFT: true, TTFT: 0.1,
			Latency: 1, OutputTokens: 10, InputTokens: 10, Success: true})
		end = max(end, send+1)
	}
	d.Phases["formal"] = PhaseBounds{Start: b, End: end, HasStart: true, HasEnd: true}
	g := GPUSeries{GPU: "0", UUID: "GPU-0", EnergySource: "counter"}
	for t := -2.0; t <= end-b+2; t += 0.1 {
		g.Energy = append(g.Energy, Sample{b + t, 100 * (t + 2)})
		g.Power = append(g.Power, Sample{b + t, 100})
	}
	d.GPUs = []GPUSeries{g}
	return d
}

// TestDrainNotTested: the windows are tested before the drain (the
// requests ended after the last send); the steady state still runs to the
// formal stage's end. 4 slots, windows 3 × 10: the staggered start spoils
// requests 0-1, the drain the last 4, so 36 requests are the fewest that
// reach it, and with 35 the reason says the drain was left out.
func TestDrainNotTested(t *testing.T) {
	p := DefaultParams()
	p.SSWindow, p.SSWindows = 10, 3
	r, _, err := computeSeries(drainRun(36, 4), p)
	if err != nil {
		t.Fatal(err)
	}
	ss := r.SteadyState
	if !ss.Reached || ss.DrainRequests != 4 || *ss.FirstRequest != 2 || *ss.LastRequest != 35 {
		t.Fatalf("36 requests: reached %v (%s), drain %d, first %v last %v; want reached from 2 to 35 with a drain of 4",
			ss.Reached, ss.Reason, ss.DrainRequests, fmtIntPtr(ss.FirstRequest), fmtIntPtr(ss.LastRequest))
	}
	r, _, err = computeSeries(drainRun(35, 4), p)
	if err != nil {
		t.Fatal(err)
	}
	if ss := r.SteadyState; ss.Reached || !strings.Contains(ss.Reason, "the last 4 requests, the drain after the last send, are not tested") {
		t.Errorf("35 requests: reached %v, reason %q", ss.Reached, ss.Reason)
	}
}

func fmtIntPtr(p *int) any {
	if p == nil {
		return nil
	}
	return *p
}
