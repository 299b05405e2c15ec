package analyze

import "fmt"

// fixtureBase is the fixture run's idle start (2026-05-28T20:26:40Z).
const fixtureBase = 1780000000.0

// fixture is a small run whose figures can be computed by hand:
//
//	idle [0,10) startup [10,20) warmup [20,30) formal [30,130) release [130,140)
//
// (seconds after fixtureBase). Two GPUs, scraped every second from −5 to
// 145: GPU 0 draws 60 W, GPU 1 40 W, so 100 W in total; the exporter
// reports phase energies of 100 W × duration. Formal: 100 back-to-back
// requests of 1 s (send 30+k, first token 0.1 s later, 10 output tokens,
// 20 input tokens) plus one failed request over [50.2, 50.5]. A warm-up
// request of 1 s at 25 s.
//
// Every successful request gets its second's 100 J: 10 J/token, CV 0, so
// steady state starts at request 0. Energy: startup+warmup 2000 J, formal
// 10000 J, release 1000 J, lifecycle 13000 J; full-lifecycle J/token
// 13000/1000 = 13. TPOT = 0.9/9 = 0.1 s.
func fixture() *RunData {
	b := fixtureBase
	d := &RunData{
		RunID:         "fixture-1",
		Phases:        map[string]PhaseBounds{},
		PhaseEnergy:   map[string]float64{},
		ReleaseClosed: ptr(true),
	}
	bounds := [][2]float64{{0, 10}, {10, 20}, {20, 30}, {30, 130}, {130, 140}}
	for i, name := range phaseNames {
		d.Phases[name] = PhaseBounds{Start: b + bounds[i][0], End: b + bounds[i][1], HasStart: true, HasEnd: true}
		d.PhaseEnergy[name] = 100 * (bounds[i][1] - bounds[i][0])
	}
	for g, w := range []float64{60, 40} {
		gs := GPUSeries{GPU: fmt.Sprint(g), UUID: fmt.Sprintf("GPU-%d", g), EnergySource: "counter"}
		for t := -5.0; t <= 145; t++ {
			gs.Energy = append(gs.Energy, Sample{b + t, 1000 + w*(t+5)})
			gs.Power = append(gs.Power, Sample{b + t, w})
		}
		d.GPUs = append(d.GPUs, gs)
	}
	for k := range 100 {
		r := req(b+30+float64(k), 0.1, b+31+float64(k), 10, true)
		r.Slot, r.InputTokens = fmt.Sprint(k%4), 20
		d.Requests = append(d.Requests, r)
	}
	fail := req(b+50.2, -1, b+50.5, 0, false)
	fail.Slot = "9"
	d.Requests = append(d.Requests, fail)
	w := req(b+25, 0.1, b+26, 10, true)
	w.Phase, w.Slot, w.InputTokens = "warmup", "0", 20
	d.Requests = append(d.Requests, w)
	return d
}

// fixtureParams are the parameters the fixture is analyzed with: windows of
// 10 requests so 100 requests can reach steady state.
func fixtureParams() Params {
	p := DefaultParams()
	p.SSWindow = 10
	p.SLOTPOT = 150e6 // 150 ms: TPOT 0.1 s meets it
	return p
}
