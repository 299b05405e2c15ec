package production

import (
	"maps"
	"math"
	"slices"

	"github.com/joulemark/joulemark/internal/contract"
)

// benchRun is one bench run's startup as the exporters marked it.
type benchRun struct {
	id            string
	begin         float64 // startup phase start
	startupEnd    float64 // 0: not ended
	warmupStarted bool
	warmupEnd     float64  // 0: not ended
	energy        float64  // startup + warmup phase energy, every GPU
	gpus          []string // gpuOf each GPU with phase energy
	model         string
}

// end is where the run's start ends (its warm-up's end, or its startup's
// when it had no warm-up) and whether it ended.
func (b *benchRun) end() (float64, bool) {
	switch {
	case b.warmupEnd > 0:
		return b.warmupEnd, true
	case b.warmupStarted:
		return 0, false
	default:
		return b.startupEnd, b.startupEnd > 0
	}
}

// last is a gauge's latest sample value.
func last(s Series) float64 { return s.Samples[len(s.Samples)-1].V }

// benchRuns gathers the runs from the phase series; several exporters (one
// per node) each mark the run's phases and measure their own GPUs.
func benchRuns(d *Data) map[string]*benchRun {
	runs := map[string]*benchRun{}
	get := func(l map[string]string) *benchRun {
		id := l[contract.LabelRunID]
		b := runs[id]
		if b == nil {
			b = &benchRun{id: id}
			runs[id] = b
		}
		return b
	}
	for _, s := range d.PhaseStarts {
		b, v := get(s.Labels), last(s)
		switch contract.Phase(s.Labels[contract.LabelPhase]) {
		case contract.Startup:
			if b.begin == 0 || v < b.begin {
				b.begin = v
			}
		case contract.Warmup:
			b.warmupStarted = true
		}
	}
	for _, s := range d.PhaseEnds {
		b, v := get(s.Labels), last(s)
		switch contract.Phase(s.Labels[contract.LabelPhase]) {
		case contract.Startup:
			b.startupEnd = max(b.startupEnd, v)
		case contract.Warmup:
			b.warmupEnd = max(b.warmupEnd, v)
		}
	}
	for _, s := range d.PhaseEnergy {
		b := get(s.Labels)
		b.energy += last(s)
		if g := gpuOf(s.Labels); s.Labels[contract.LabelUUID] != "" && !slices.Contains(b.gpus, g) {
			b.gpus = append(b.gpus, g)
		}
	}
	for _, s := range d.RunInfo {
		if b := runs[s.Labels[contract.LabelRunID]]; b != nil {
			b.model = s.Labels["model"]
		}
	}
	return runs
}

// gpuOf names the GPU of a series by its host: the exporter instance and
// the UUID (two hosts may report the same UUIDs: cloned VMs, simulators).
func gpuOf(l map[string]string) string { return gpuKey(l["instance"], l[contract.LabelUUID]) }

// gpuKey is gpuOf of a GPU's instance and UUID.
func gpuKey(instance, uuid string) string { return instance + " " + uuid }

// benchStarts is the startup of every bench-started engine inside
// (From, To]: a run whose startup phase began in the range, in run ID
// order. Each takes the pod holding one of the run's GPUs during its
// startup, when one does (fold.addPods).
func benchStarts(d *Data) []benchStart {
	var out []benchStart
	runs := benchRuns(d)
	for _, id := range slices.Sorted(maps.Keys(runs)) {
		b := runs[id]
		if b.begin <= d.From || b.begin > d.To {
			continue
		}
		end, ended := b.end()
		ended = ended && end <= d.To
		s := Start{Source: StartBench, RunID: id, Model: b.model, AllocatedAt: b.begin, EnergyJoules: b.energy, Complete: ended}
		if ended {
			s.EndAt = &end
		} else {
			end = d.To
		}
		out = append(out, benchStart{Start: s, gpus: b.gpus, end: end})
	}
	return out
}

// slack is how far an allocation sample may lie from a bench startup's
// bounds and still be that startup's: the pod's scrape step (6 s at least).
func (p *pod) slack() float64 { return startGap(p.alloc) / 5 }

// heldDuring: the pod held one of gpus (gpuOf) at an allocation sample
// within [a, b] (widened by its slack).
func (p *pod) heldDuring(gpus []string, a, b float64) bool {
	sl := p.slack()
	for _, u := range gpus {
		for _, t := range p.held[u] {
			if t >= a-sl && t <= b+sl {
				return true
			}
		}
	}
	return false
}

// mergeStarts drops the allocation starts of pod p that a bench start
// it took saw too (bench): one appearing during that startup (give or take
// the pod's slack) is the bench start, whose bounds and energy are the
// exporters' exact ones.
func mergeStarts(alloc, bench []Start, p *pod) []Start {
	var out []Start
	for _, a := range alloc {
		same := func(b Start) bool {
			end := math.Inf(1)
			if b.EndAt != nil {
				end = *b.EndAt
			}
			return a.AllocatedAt >= b.AllocatedAt-p.slack() && a.AllocatedAt <= end+p.slack()
		}
		if !slices.ContainsFunc(bench, same) {
			out = append(out, a)
		}
	}
	return out
}
