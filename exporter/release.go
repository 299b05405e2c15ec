package exporter

import (
	"fmt"
	"math"

	"github.com/joulemark/joulemark/internal/gpu"
	"github.com/joulemark/joulemark/internal/phaseapi"
)

// Release per the method: the release phase ends when the inference
// process has exited, GPU memory is back to the idle phase's, and power is
// back within the tolerance of the idle baseline, all three held for
// ReleaseHold. Each criterion keeps the instant it was last met since; the
// hold begins at the latest of them (the criterion that closed last), and
// the release phase ends there.

// releaseMemorySlack is the absolute slack of the memory criterion on top
// of ReleaseTolerance × the idle memory: the driver's own allocations move
// by a few MiB.
const releaseMemorySlack = 256 << 20

// criterion is one release criterion's state.
type criterion struct {
	met   bool
	since int64 // when it was last met since (offset)
	why   string
}

func (c *criterion) set(met bool, now int64, why string) {
	if met && !c.met {
		c.since = now
	}
	c.met, c.why = met, why
	if met {
		c.why = ""
	}
}

// releaseCriteria are the process, memory and power criteria of a run's
// release, and when the bench said the engine exited.
type releaseCriteria struct {
	process, memory, power criterion
	engineExited           bool
	engineExitedAt         int64
	processBasis           string // what the process criterion was judged from (phaseapi.Basis*)
	closedBy               string
}

// idleMemory accumulates GPU i's memory use over the idle phase.
func (r *run) onIdleMemory(i int, used float64) {
	if math.IsNaN(used) {
		return
	}
	if r.idleMem == nil {
		r.idleMem = make([]welford, len(r.idleAcc))
	}
	if i < len(r.idleMem) {
		r.idleMem[i].add(used)
	}
}

// onIdlePIDs adds the compute PIDs of GPU i seen during the idle phase.
func (r *run) onIdlePIDs(i int, pids []uint32) {
	if pids == nil {
		return
	}
	if r.idlePIDs == nil {
		r.idlePIDs = make([]map[uint32]bool, len(r.idleAcc))
	}
	if i >= len(r.idlePIDs) {
		return
	}
	if r.idlePIDs[i] == nil {
		r.idlePIDs[i] = map[uint32]bool{}
	}
	for _, p := range pids {
		r.idlePIDs[i][p] = true
	}
}

// newPIDs are the PIDs of GPU i's compute processes not seen on it in the
// idle phase; ok is false when either side is unknown.
func (r *run) newPIDs(i int, now []uint32) (out []uint32, ok bool) {
	if now == nil || i >= len(r.idlePIDs) || r.idlePIDs[i] == nil {
		return nil, false
	}
	for _, p := range now {
		if !r.idlePIDs[i][p] {
			out = append(out, p)
		}
	}
	return out, true
}

// evalProcess: the engine exited (the bench said so), or, without that
// signal and unless Config.ReleaseRequireEngineExit, NVML lists no compute
// process on the run's GPUs that was not there in the idle phase (PID
// sets; counts where the sets are unknown, as for a run restored from a
// state file). A GPU that cannot list its processes does not hold the
// release; when none can, or the lists are blind (Config.ProcessesBlind),
// the criterion is met unverified (basis BasisUnverified).
func (l *lifecycle) evalProcess(r *run, now int64) {
	c := &r.crit
	if c.engineExited {
		if !c.process.met || c.processBasis != phaseapi.BasisEngineExit {
			c.process.met, c.process.since, c.process.why = true, c.engineExitedAt, ""
			c.processBasis = phaseapi.BasisEngineExit
		}
		return
	}
	if l.cfg.ReleaseRequireEngineExit {
		c.processBasis = ""
		c.process.set(false, now, "the bench has not reported the engine's exit (--release.require-engine-exit)")
		return
	}
	if l.cfg.ProcessesBlind != "" {
		c.processBasis = phaseapi.BasisUnverified
		c.process.set(true, now, "")
		c.process.why = "met unverified: " + l.cfg.ProcessesBlind
		return
	}
	known := false
	for i, g := range l.gpus {
		if !r.measured(i) || r.lost(i) || r.failedGap(i) || !g.hasSlow || g.slow.ComputeProcesses < 0 {
			continue
		}
		known = true
		if why := processHolds(r, i, g.slow); why != "" {
			c.processBasis = ""
			c.process.set(false, now, why+" and the engine's exit was not reported")
			return
		}
	}
	c.processBasis = phaseapi.BasisNVML
	if !known {
		c.processBasis = phaseapi.BasisUnverified
	}
	c.process.set(true, now, "")
}

// processHolds says why GPU i's compute processes hold the release: one
// not seen in the idle phase, or, with the PIDs unknown, more than then.
func processHolds(r *run, i int, s gpu.SlowSample) string {
	if pids, ok := r.newPIDs(i, s.ComputePIDs); ok {
		if len(pids) > 0 {
			return fmt.Sprintf("gpu %d has compute process(es) %v not seen in the idle phase", i, pids)
		}
		return ""
	}
	idle := 0
	if i < len(r.idleProcs) {
		idle = max(r.idleProcs[i], 0)
	}
	if s.ComputeProcesses > idle {
		return fmt.Sprintf("gpu %d has %d compute process(es) (idle phase: %d)", i, s.ComputeProcesses, idle)
	}
	return ""
}

// evalMemory: every GPU's memory in use is back within ReleaseTolerance
// (plus releaseMemorySlack) of its mean over the idle phase. Unknown
// memory does not hold the release.
func (l *lifecycle) evalMemory(r *run, now int64) {
	for i, g := range l.gpus {
		if !r.measured(i) || r.lost(i) || r.failedGap(i) || !g.hasSlow || math.IsNaN(g.slow.MemoryUsedBytes) || i >= len(r.idleMem) || r.idleMem[i].n == 0 {
			continue
		}
		idle := r.idleMem[i].mean
		if used := g.slow.MemoryUsedBytes; used > idle*(1+l.cfg.ReleaseTolerance)+releaseMemorySlack {
			r.crit.memory.set(false, now, fmt.Sprintf("gpu %d memory %.2f GiB, idle %.2f GiB", i, used/(1<<30), idle/(1<<30)))
			return
		}
	}
	r.crit.memory.set(true, now, "")
}

// holdStart is when every criterion has been met since, and which one was
// met last; ok is false while one is not met.
func (r *run) holdStart() (at int64, last string, ok bool) {
	c := &r.crit
	if !c.process.met || !c.memory.met || !c.power.met {
		return 0, "", false
	}
	at, last = c.power.since, phaseapi.CriterionPower
	if c.memory.since > at {
		at, last = c.memory.since, phaseapi.CriterionMemory
	}
	if c.process.since > at {
		at, last = c.process.since, phaseapi.CriterionProcess
	}
	return at, last, true
}

// criteriaStatus is the API view of the release criteria.
func (e *Exporter) criteriaStatus(r *run) []phaseapi.ReleaseCriterion {
	out := make([]phaseapi.ReleaseCriterion, 0, 3)
	for _, c := range []struct {
		name string
		c    criterion
	}{{phaseapi.CriterionProcess, r.crit.process}, {phaseapi.CriterionMemory, r.crit.memory}, {phaseapi.CriterionPower, r.crit.power}} {
		rc := phaseapi.ReleaseCriterion{Name: c.name, Met: c.c.met, Reason: c.c.why}
		if c.name == phaseapi.CriterionProcess && c.c.met {
			rc.Basis = r.crit.processBasis
		}
		if c.c.met {
			t := e.unix(c.c.since)
			rc.Since = &t
		}
		out = append(out, rc)
	}
	return out
}
