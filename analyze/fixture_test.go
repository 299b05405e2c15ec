package analyze

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/joulemark/joulemark/internal/contract"
	"github.com/joulemark/joulemark/internal/remotewrite"
)

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
		ReleaseClosed: new(true),
		RunInfo: &contract.RunIdentity{RunID: "fixture-1", Model: "fixture-model", Engine: "vllm", EngineVersion: "0.11.0",
			GPUName: "Fixture GPU", GPUs: 2, LoadMode: "closed", Concurrency: 4, MeanInputTokens: 20, MeanOutputTokens: 10,
			IgnoreEOS: true, DatasetSHA256: "5d41402abc4b2a76b9719d911017c592aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"},
	}
	bounds := [][2]float64{{0, 10}, {10, 20}, {20, 30}, {30, 130}, {130, 140}}
	for i, ph := range contract.Phases {
		name := string(ph)
		d.Phases[name] = PhaseBounds{Start: b + bounds[i][0], End: b + bounds[i][1], HasStart: true, HasEnd: true}
		d.PhaseEnergy[name] = 100 * (bounds[i][1] - bounds[i][0])
	}
	for g, w := range []float64{60, 40} {
		gs := GPUSeries{GPU: fmt.Sprint(g), UUID: fmt.Sprintf("GPU-%d", g), EnergySource: "counter"}
		for t := -5.0; t <= 145; t++ {
			gs.Energy = append(gs.Energy, Sample{b + t, 1000 + w*(t+5)})
			gs.Power = append(gs.Power, Sample{b + t, w})
			// memory: 10 GiB per GPU, GPU g adds g GiB at the formal
			// phase's midpoint (80 s)
			mem := float64(10 << 30)
			if t >= 80 {
				mem += float64(g << 30)
			}
			gs.Memory = append(gs.Memory, Sample{b + t, mem})
			gs.Utilization = append(gs.Utilization, Sample{b + t, 0.9})
		}
		d.GPUs = append(d.GPUs, gs)
	}
	for k := range 100 {
		r := req(b+30+float64(k), 0.1, b+31+float64(k), 10, true)
		r.SlotRank, r.InputTokens = int32(k%4), 20
		d.Requests = append(d.Requests, r)
	}
	fail := req(b+50.2, -1, b+50.5, 0, false)
	fail.SlotRank = 9
	d.Requests = append(d.Requests, fail)
	w := req(b+25, 0.1, b+26, 10, true)
	w.Formal, w.SlotRank, w.InputTokens = false, 0, 20
	d.Requests = append(d.Requests, w)
	// Engine (vLLM names), healthy: 4 running, none waiting, KV cache half
	// full, no preemption, 10 generated tokens per second over the formal
	// phase, matching the client's 1000.
	d.Engine = &EngineData{Selector: `model_name="fixture-model"`, Series: map[string][][]Sample{}}
	for _, m := range []struct {
		name string
		v    func(t float64) float64
	}{
		{"vllm:num_requests_running", func(float64) float64 { return 4 }},
		{"vllm:num_requests_waiting", func(float64) float64 { return 0 }},
		{"vllm:kv_cache_usage_perc", func(float64) float64 { return 0.5 }},
		{"vllm:num_preemptions_total", func(float64) float64 { return 0 }},
		{"vllm:generation_tokens_total", func(t float64) float64 { return 10 * min(max(t-30, 0), 100) }},
	} {
		var s []Sample
		for t := -5.0; t <= 145; t++ {
			s = append(s, Sample{b + t, m.v(t)})
		}
		d.Engine.Series[m.name] = [][]Sample{s}
	}
	// Host: package-0 draws 20 W, DRAM 5 W, scraped every second like the
	// GPUs; the exporter's host phase energies are 25 W × duration.
	d.Host = &HostData{PhaseEnergy: map[string]float64{}, Zones: []string{"fixture:9400 intel-rapl:0 (package-0)", "fixture:9400 intel-rapl:0:0 (dram)"},
		Unavailable: map[string]string{}}
	for i, ph := range contract.Phases {
		name := string(ph)
		d.Host.PhaseEnergy[name] = 25 * (bounds[i][1] - bounds[i][0])
	}
	for _, w := range []float64{20, 5} {
		var s []Sample
		for t := -5.0; t <= 145; t++ {
			s = append(s, Sample{b + t, 500 + w*(t+5)})
		}
		d.Host.Counters = append(d.Host.Counters, s)
	}
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

// fixtureSamples renders the fixture as the series the exporter and the
// benchjob would have put in Prometheus.
func fixtureSamples(d *RunData) []remotewrite.Sample {
	var out []remotewrite.Sample
	add := func(v float64, t float64, kv ...string) {
		l := map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			l[kv[i]] = kv[i+1]
		}
		out = append(out, remotewrite.Sample{Labels: l, Value: v, TimestampMs: int64(math.Round(t * 1000))})
	}
	const inst, job = "fixture:9400", "joulemark"
	var last float64
	for _, b := range d.Phases {
		last = max(last, b.End)
	}
	// Phase gauges: scraped every second from the phase start to 5 s after
	// the run.
	for name, b := range d.Phases {
		for t := math.Ceil(b.Start); t <= last+5; t++ {
			add(b.Start, t, "__name__", contract.PhaseStart, "run_id", d.RunID, "phase", name, "instance", inst, "job", job)
			if t >= b.End {
				add(b.End, t, "__name__", contract.PhaseEnd, "run_id", d.RunID, "phase", name, "instance", inst, "job", job)
			}
		}
	}
	for name, e := range d.PhaseEnergy {
		for _, gs := range d.GPUs {
			add(e/float64(len(d.GPUs)), last+1, "__name__", contract.PhaseEnergy, "run_id", d.RunID, "phase", name, "gpu", gs.GPU, "uuid", gs.UUID, "instance", inst, "job", job)
		}
	}
	if d.ReleaseClosed != nil {
		v := 0.0
		if *d.ReleaseClosed {
			v = 1
		}
		add(v, last+1, "__name__", contract.RunReleaseClosed, "run_id", d.RunID, "instance", inst, "job", job)
	}
	if d.RunInfo != nil {
		// pushed by the bench job at the formal start and at its end
		var kv []string
		for k, v := range d.RunInfo.Labels() {
			kv = append(kv, k, v)
		}
		for _, t := range []float64{d.Phases["formal"].Start, last} {
			add(1, t, append([]string{"__name__", contract.RunInfo}, kv...)...)
		}
	}
	if d.Engine != nil {
		for name, ss := range d.Engine.Series {
			for _, s := range ss {
				for _, x := range s {
					add(x.V, x.T, "__name__", name, "model_name", d.RunInfo.Model, "instance", "engine:8000", "job", "inference-engine")
				}
			}
		}
	}
	if h := d.Host; h != nil {
		zones := [][2]string{{"intel-rapl:0", "package-0"}, {"intel-rapl:0:0", "dram"}}
		for name, e := range h.PhaseEnergy {
			for zi, z := range zones {
				share := []float64{0.8, 0.2}[zi] // 20 W and 5 W of 25 W
				add(e*share, last+1, "__name__", contract.PhaseHostEnergy, "run_id", d.RunID, "phase", name, "zone", z[0], "domain", z[1], "instance", inst, "job", job)
			}
			// core lies inside the package: never summed
			add(e, last+1, "__name__", contract.PhaseHostEnergy, "run_id", d.RunID, "phase", name, "zone", "intel-rapl:0:1", "domain", "core", "instance", inst, "job", job)
		}
		for zi, s := range h.Counters {
			for _, x := range s {
				add(x.V, x.T, "__name__", contract.HostEnergy, "zone", zones[zi][0], "domain", zones[zi][1], "instance", inst, "job", job)
			}
		}
		for inst, reason := range h.Unavailable {
			add(1, last, "__name__", contract.HostEnergyUnavail, "reason", reason, "instance", inst, "job", job)
		}
	}
	for _, gs := range d.GPUs {
		for _, s := range gs.Energy {
			add(s.V, s.T, "__name__", contract.GPUEnergy, "gpu", gs.GPU, "uuid", gs.UUID, "instance", inst, "job", job)
			add(1, s.T, "__name__", contract.GPUInfo, "gpu", gs.GPU, "uuid", gs.UUID, "instance", inst, "job", job, "name", "Fixture GPU", "energy_source", gs.EnergySource)
		}
		for _, s := range gs.Power {
			add(s.V, s.T, "__name__", contract.GPUPower, "gpu", gs.GPU, "uuid", gs.UUID, "instance", inst, "job", job)
		}
		for _, s := range gs.Utilization {
			add(s.V, s.T, "__name__", contract.GPUUtilization, "gpu", gs.GPU, "uuid", gs.UUID, "instance", inst, "job", job)
		}
		for _, s := range gs.Memory {
			add(s.V, s.T, "__name__", contract.GPUMemoryUsed, "gpu", gs.GPU, "uuid", gs.UUID, "instance", inst, "job", job)
		}
	}
	for _, r := range d.Requests {
		phase := "warmup"
		if r.Formal {
			phase = "formal"
		}
		lbl := func(name string) []string {
			return []string{"__name__", name, "run_id", d.RunID, "phase", phase, "slot", fmt.Sprint(r.SlotRank)}
		}
		succ := 0.0
		if r.Success {
			succ = 1
		}
		add(float64(r.OutputTokens), r.End, lbl(contract.RequestOutputTokens)...)
		add(float64(r.InputTokens), r.End, lbl(contract.RequestInputTokens)...)
		add(r.Latency, r.End, lbl(contract.RequestLatency)...)
		add(succ, r.End, lbl(contract.RequestSuccess)...)
		if r.HasTTFT {
			add(r.TTFT, r.End, lbl(contract.RequestTTFT)...)
		}
	}
	return out
}

// fixtureNow is when the fixture is analyzed: an hour after it ended.
func fixtureNow() time.Time { return time.Unix(int64(fixtureBase)+3600, 0) }

// loadRun reads the run's data from cfg's Prometheus, as the read step
// does; arch, when set, fills in what Prometheus lacks.
func loadRun(ctx context.Context, cfg Config, arch *BenchArchive) (*RunData, error) {
	prom, rr, err := promClients(cfg)
	if err != nil {
		return nil, err
	}
	return load(ctx, cfg, prom, rr, arch)
}
