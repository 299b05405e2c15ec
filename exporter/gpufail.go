package exporter

import (
	"log/slog"
	"slices"

	"github.com/joulemark/joulemark/internal/contract"
	"github.com/joulemark/joulemark/internal/phaseapi"
)

// A GPU whose reads fail (an error: "GPU is lost", Xid 79) or hang (no
// answer for stallIntervals intervals) while the exporter runs is out: it
// is not measured until it answers again. Every active run measuring it
// gets a gap of its own (phaseapi.Gap.GPUs, reason contract.GapGPUFailed
// or contract.GapGPUHung) from its last good sample, the same gap a GPU
// missing after a restart gets (absentgpu.go): boundaries made meanwhile
// take its energy at that sample instead of waiting for one after them (a
// run with a dead GPU still ends and freezes), each phase's gpus[] entry
// gives its missing_seconds, and release detection goes on without it.
// When it answers again (the same UUID: a GPU behind the same index with
// another identity is not the run's and never answers as the same device
// here, as the backend keeps the handle) its gap ends at that sample: the
// gap's energy is counted when the GPU's own counter bridged it and the
// running phase began before the gap (resumeFailed), never integrated
// across it.

// gpuOut marks GPU i out from now on (reason: contract.GapGPUFailed or
// GapGPUHung); its gap in each run starts at its last good sample. Called
// with e.mu held.
func (e *Exporter) gpuOut(i int, reason string, why string) {
	g := e.gpus[i]
	if g.out {
		return
	}
	g.out, g.outReason = true, reason
	e.log.Warn("GPU not answering: the runs measuring it get a gap of their own from its last good sample until it answers again",
		"gpu", i, "uuid", g.dev.UUID, "reason", reason, "err", why, "last_sample", e.wall(g.lastT))
	e.lc.syncFailGaps()
}

// checkStalls marks out every GPU whose read has hung for stallIntervals
// intervals at offset now. Called with e.mu held.
func (e *Exporter) checkStalls(now int64) {
	if !e.sampling {
		return
	}
	for i, g := range e.gpus {
		if !g.out && e.stalled(g, now) {
			e.gpuOut(i, contract.GapGPUHung, "read not returned")
		}
	}
}

// outSince is the offset GPU g's gaps start at: its last good sample, or
// the exporter's start when it never answered.
func outSince(g *gpuState) int64 {
	if g.has {
		return g.lastT
	}
	return 0
}

// syncFailGaps opens a gap in every active run measuring a GPU that is out
// and has none open for it (a run started while the GPU was out starts its
// gap at its first phase).
func (l *lifecycle) syncFailGaps() {
	for i, g := range l.gpus {
		if !g.out {
			continue
		}
		for _, r := range l.runs {
			if r.ended || len(r.phases) == 0 || !r.measured(i) || r.absent[i] != nil {
				continue
			}
			if _, open := r.failed[i]; open {
				continue
			}
			start := max(outSince(g), r.phases[0].start.t)
			r.gaps = append(r.gaps, phaseapi.Gap{Start: l.unix(start), End: l.unix(start), Reason: g.outReason, GPUs: []int{i}, Open: true})
			if r.failed == nil {
				r.failed = map[int]int{}
			}
			r.failed[i] = len(r.gaps) - 1
			l.note(slog.LevelWarn, "a run's GPU is not answering: it is not measured until it answers again (a gap of its own)",
				"run_id", r.id, "gpu", i, "uuid", g.dev.UUID, "reason", g.outReason, "gap_start", l.wall(start))
		}
	}
}

// outEnergy resolves GPU i's energy at t when the GPU is out and t is past
// its last good sample: the energy there (nothing is measured after it).
func (l *lifecycle) outEnergy(i int, t int64) (float64, bool) {
	g := l.gpus[i]
	if !g.out || g.has && t <= g.lastT {
		return 0, false
	}
	return g.energy, true
}

// resumeFailed ends GPU i's gaps at offset t, its first good sample after
// it was out: bridged says the sample's energy came from the GPU's own
// counter across the gap. A phase begun in the gap counts from t (the
// gap's energy belongs partly to the phases before it, which ended at the
// energy of its last good sample). Called with e.mu held, after the
// sample was added.
func (e *Exporter) resumeFailed(i int, bridged bool, t int64) {
	g := e.gpus[i]
	g.out, g.outReason = false, ""
	for _, r := range e.lc.runs {
		k, open := r.failed[i]
		if !open {
			continue
		}
		delete(r.failed, i)
		if r.ended {
			continue // its gap ends at the run's end (runGaps)
		}
		gp := &r.gaps[k]
		gp.End, gp.Open = e.unix(t), false
		counted := bridged && e.restartFrom(r, i, gp.Start)
		if counted {
			gp.EnergyBridgedGPUs = []int{i}
		}
		e.log.Info("a run's GPU answers again and is measured again", "run_id", r.id, "gpu", i, "uuid", g.dev.UUID,
			"gap_seconds", gp.End-gp.Start, "gap_energy_counted", counted)
	}
}

// restartFrom makes run r's running phase count GPU i from its energy now
// when the phase began after gapStart (unix seconds); it reports whether
// the phase began before, so that it counts the gap's energy.
func (e *Exporter) restartFrom(r *run, i int, gapStart float64) bool {
	cur := r.current()
	if cur == nil || e.unix(cur.start.t) <= gapStart {
		return true
	}
	// the start is the previous phase's end too: that one keeps its energy
	b := *cur.start
	b.e, b.ok = slices.Clone(b.e), slices.Clone(b.ok)
	if !b.ok[i] {
		b.left--
	}
	b.e[i], b.ok[i] = e.gpus[i].energy, true
	cur.start = &b
	if b.left > 0 {
		e.lc.pending = append(e.lc.pending, &b)
	}
	return false
}

// failedGap says GPU i of run r is in a gap of its own for a failure.
func (r *run) failedGap(i int) bool {
	_, open := r.failed[i]
	return open
}

// closeFailGapsAtRestart ends the failure gaps a restored run carried open
// at the save: the restart's gap covers every GPU from there, and the
// restarted exporter opens new ones for a GPU still out. Called from New
// after restore.
func (e *Exporter) closeFailGapsAtRestart() {
	for _, r := range e.lc.runs {
		k := slices.IndexFunc(r.gaps, func(g phaseapi.Gap) bool {
			return g.Reason == contract.GapExporterRestarted && g.AllGPUs() && g.End == e.restartedAt()
		})
		if k < 0 {
			continue
		}
		for j := range r.gaps {
			if g := &r.gaps[j]; g.Open && (g.Reason == contract.GapGPUFailed || g.Reason == contract.GapGPUHung) {
				g.End, g.Open = max(g.Start, r.gaps[k].Start), false
			}
		}
	}
}
