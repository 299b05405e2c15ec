package analyze

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// synthRun is a realistic run for benchmarks and the screenshot test:
// nGPU GPUs sampled at hz, a closed loop of nReq formal requests spread
// over about formalDur seconds, idle 60 s, startup 60 s, warm-up 30 s,
// release 60 s. Power rises to 450 W per GPU when formal starts and settles
// at 350 W after about a minute, so per-request J/token settles too.
func synthRun(nReq, nGPU int, formalDur, hz float64) *RunData {
	rng := rand.New(rand.NewPCG(7, 11))
	b := fixtureBase
	idle, startup, warm := b, b+60, b+120
	formal := b + 150
	d := &RunData{RunID: "synth", Phases: map[string]PhaseBounds{}, PhaseEnergy: map[string]float64{}, ReleaseClosed: new(true)}

	meanLat := 0.15 + 0.025*299 // mean TTFT + TPOT·(mean tokens − 1)
	conc := max(1, int(math.Round(float64(nReq)*meanLat/formalDur)))
	next := make([]float64, conc)
	for s := range next {
		next[s] = formal + rng.Float64()*0.5
	}
	d.Requests = make([]Request, 0, nReq+conc)
	formalEnd := formal
	for i := range nReq {
		s := i % conc
		tok := int32(100 + rng.IntN(400))
		ttft := 0.05 + 0.2*rng.Float64()
		lat := ttft + 0.025*float64(tok-1)*(0.95+0.1*rng.Float64())
		send := next[s]
		r := Request{Formal: true, SlotRank: int32(s), Send: send, End: send + lat, HasTTFT: true, TTFT: ttft,
			Latency: lat, OutputTokens: tok, InputTokens: 200, Success: true}
		if rng.IntN(1000) == 0 {
			r.Success, r.HasTTFT, r.OutputTokens = false, false, 0
		}
		// Millisecond timestamps, as Prometheus stores them.
		r.End = math.Round(r.End*1000) / 1000
		d.Requests = append(d.Requests, r)
		next[s] = r.End
		formalEnd = max(formalEnd, r.End)
	}
	formalEnd = math.Ceil(formalEnd)
	release := formalEnd
	end := release + 60
	bounds := map[string][2]float64{"idle": {idle, startup}, "startup": {startup, warm}, "warmup": {warm, formal}, "formal": {formal, formalEnd}, "release": {release, end}}
	for name, bd := range bounds {
		d.Phases[name] = PhaseBounds{Start: bd[0], End: bd[1], HasStart: true, HasEnd: true}
	}
	power := func(g int, t float64) float64 {
		switch {
		case t < startup || t >= end-40:
			return 80
		case t < formal:
			return 200
		case t < formalEnd:
			return 350 + 100*math.Exp(-(t-formal)/20) + 5*math.Sin(t/3+float64(g))
		default:
			return 80 + 120*math.Exp(-(t-release)/5)
		}
	}
	dt := 1 / hz
	n := int((end+5-(idle-5))*hz) + 1
	for g := range nGPU {
		gs := GPUSeries{GPU: fmt.Sprint(g), UUID: fmt.Sprintf("GPU-%d", g), EnergySource: "counter",
			Energy: make([]Sample, 0, n), Power: make([]Sample, 0, n)}
		c := 0.0
		for k := range n {
			t := idle - 5 + float64(k)*dt
			p := power(g, t)
			gs.Energy = append(gs.Energy, Sample{t, c})
			gs.Power = append(gs.Power, Sample{t, p})
			c += p * dt // the power of [t, t+dt)
		}
		d.GPUs = append(d.GPUs, gs)
	}
	// The exporter's phase energies: the counter's own, so they agree.
	for name, bd := range bounds {
		e := 0.0
		for _, gs := range d.GPUs {
			v, _ := newCurve(gs.Energy, 1).between(bd[0], bd[1])
			e += v
		}
		d.PhaseEnergy[name] = e
	}
	return d
}
