package exporter

import (
	"fmt"
	"maps"
	"math"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/joulemark/joulemark/exporter/phaseapi"
	"github.com/joulemark/joulemark/internal/contract"
	"github.com/joulemark/joulemark/internal/gpu"
)

// boundary is one exact phase boundary and every GPU's cumulative energy
// there, resolved once a sample at or after t exists.
type boundary struct {
	t    int64
	e    []float64
	ok   []bool
	left int
	host []float64 // each RAPL zone's cumulative joules at t (NaN: unreadable); nil without host metering
}

type phaseRec struct {
	phase      contract.Phase
	start, end *boundary // end is nil while the phase runs
}

type welford struct {
	n        int
	mean, m2 float64
}

func (w *welford) add(x float64) {
	w.n++
	d := x - w.mean
	w.mean += d / float64(w.n)
	w.m2 += d * (x - w.mean)
}

// cv is the population coefficient of variation.
func (w *welford) cv() float64 {
	if w.n < 2 || w.mean == 0 {
		return math.NaN()
	}
	return math.Sqrt(w.m2/float64(w.n)) / w.mean
}

type release struct {
	state     string
	closed    *bool
	reason    string
	holding   bool
	holdStart int64
}

type run struct {
	id     string
	phases []*phaseRec
	ended  bool
	frozen *frozenRun // set once the run can no longer change

	idleAcc   []welford
	idleProcs []int
	idlePIDs  []map[uint32]bool // per GPU, every compute PID seen in the idle phase; nil: none known (release.go)
	idleMem   []welford         // memory in use over the idle phase (release.go)
	rel       release
	crit      releaseCriteria
	endReason string         // phaseapi.EndReason*, once ended
	gaps      []phaseapi.Gap // intervals the exporter was down

	gpus     []bool             // GPUs measured, nil: every GPU (selector.go)
	selected bool               // the first phase carried a selector
	selector *phaseapi.Selector // that selector, for the API
	// coTenants are the other pods seen holding the run's GPUs (pod
	// selector only; selector.go).
	coTenants map[string]bool
}

func (r *run) current() *phaseRec {
	if len(r.phases) == 0 {
		return nil
	}
	return r.phases[len(r.phases)-1]
}

func (r *run) active(p contract.Phase) bool {
	c := r.current()
	return !r.ended && c != nil && c.end == nil && c.phase == p
}

func (r *run) onSample(i int, p float64) {
	if r.active(contract.Idle) {
		r.idleAcc[i].add(p)
	}
}

func (r *run) onSlow(i int, s gpu.SlowSample) {
	if !r.active(contract.Idle) {
		return
	}
	if s.ComputeProcesses > r.idleProcs[i] {
		r.idleProcs[i] = s.ComputeProcesses
	}
	r.onIdlePIDs(i, s.ComputePIDs)
	r.onIdleMemory(i, s.MemoryUsedBytes)
}

func (r *run) phase(p contract.Phase) *phaseRec {
	for _, ph := range r.phases {
		if ph.phase == p {
			return ph
		}
	}
	return nil
}

// apiError carries the HTTP status of a refused request.
type apiError struct {
	code int
	msg  string
}

func (e *apiError) Error() string { return e.msg }

func errf(code int, format string, args ...any) *apiError {
	return &apiError{code: code, msg: fmt.Sprintf(format, args...)}
}

// newBoundary makes a boundary at t and resolves what it can now. Called with
// e.mu held.
func (e *Exporter) newBoundary(t int64) *boundary {
	b := &boundary{t: t, e: make([]float64, len(e.gpus)), ok: make([]bool, len(e.gpus)), left: len(e.gpus), host: e.hostNow()}
	e.resolve(b)
	if b.left > 0 {
		e.pending = append(e.pending, b)
		if max := 20 * e.cfg.MaxRuns; len(e.pending) > max {
			e.pending = e.pending[len(e.pending)-max:]
		}
	}
	return b
}

func (e *Exporter) resolve(b *boundary) {
	for i, g := range e.gpus {
		if b.ok[i] {
			continue
		}
		if v, ok := g.ring.energyAt(b.t, g.counter); ok {
			b.e[i], b.ok[i] = v, true
			b.left--
		}
	}
}

func (e *Exporter) resolvePending() {
	keep := e.pending[:0]
	for _, b := range e.pending {
		e.resolve(b)
		if b.left > 0 {
			keep = append(keep, b)
		}
	}
	clear(e.pending[len(keep):])
	e.pending = keep
}

// phaseEnergy is GPU i's energy over ph: exact once both boundaries are
// resolved, up to the latest sample before that.
func (e *Exporter) phaseEnergy(ph *phaseRec, i int) float64 {
	if !ph.start.ok[i] {
		return 0
	}
	end := e.gpus[i].energy
	if ph.end != nil && ph.end.ok[i] {
		end = ph.end.e[i]
	}
	return math.Max(0, end-ph.start.e[i])
}

// startPhase starts phase p of run id at now, ending the previous phase at
// the same instant. Called with e.mu held.
func (e *Exporter) startPhase(id string, p contract.Phase, now int64) (*run, error) {
	r := e.runs[id]
	if r == nil {
		if _, used := e.seen[id]; used {
			return nil, errf(http.StatusConflict, "run ID %s was used before on this exporter; start a new run ID", id)
		}
		active := 0
		for _, x := range e.runs {
			if !x.ended {
				active++
			}
		}
		if active >= e.cfg.MaxRuns {
			return nil, errf(http.StatusTooManyRequests, "%d runs are active (the most this exporter keeps); end one first", active)
		}
		r = &run{id: id, idleAcc: make([]welford, len(e.gpus)), idleProcs: make([]int, len(e.gpus)),
			rel: release{state: phaseapi.ReleaseNotStarted}}
		for i := range r.idleProcs {
			r.idleProcs[i] = -1
		}
		if err := e.recordRunID(id); err != nil {
			return nil, errf(http.StatusServiceUnavailable, "recording run ID %s: %v; nothing was applied: retry", id, err)
		}
		e.runs[id] = r
	}
	if r.ended {
		return r, errf(http.StatusConflict, "run %s has ended; start a new run ID", id)
	}
	cur := r.current()
	if cur != nil && cur.phase == p && cur.end == nil {
		return r, nil // a retried POST: the phase started at the first one
	}
	if cur != nil && p.Index() <= cur.phase.Index() {
		return r, errf(http.StatusConflict, "run %s is in phase %s; %s cannot follow it (order: idle, startup, warmup, formal, release)", id, cur.phase, p)
	}
	b := e.newBoundary(now)
	if cur != nil {
		cur.end = b
	}
	r.phases = append(r.phases, &phaseRec{phase: p, start: b})
	if p == contract.Release {
		r.rel.state = phaseapi.ReleaseWaiting
	}
	e.log.Info("phase started", "run_id", id, "phase", p, "at", e.wall(now))
	return r, nil
}

// endRun closes run id at now. Ending an ended run changes nothing.
func (e *Exporter) endRun(id string, now int64) (*run, error) {
	r := e.runs[id]
	if r == nil {
		return nil, errf(http.StatusNotFound, "no run %s on this exporter", id)
	}
	if r.ended {
		return r, nil
	}
	if cur := r.current(); cur != nil && cur.end == nil {
		cur.end = e.newBoundary(now)
		if cur.phase == contract.Release && r.rel.state == phaseapi.ReleaseWaiting {
			f := false
			r.rel.state, r.rel.closed = phaseapi.ReleaseTimedOut, &f
			r.rel.reason = "run ended through the API before power came back to the idle baseline"
		}
	}
	e.finishRun(r, phaseapi.EndReasonAPI)
	e.log.Info("run ended", "run_id", id, "at", e.wall(now))
	return r, nil
}

func (e *Exporter) finishRun(r *run, reason string) {
	r.ended, r.endReason = true, reason
	e.dirty.Store(true)
	e.finished = append(e.finished, r.id)
	for len(e.finished) > e.cfg.MaxRuns {
		if old := e.runs[e.finished[0]]; old != nil && old.frozen != nil {
			e.frozenVersion++
		}
		delete(e.runs, e.finished[0])
		e.finished = e.finished[1:]
	}
}

// baseline returns each GPU's idle baseline power, or nil until the idle
// phase ended and its energy is resolved on every GPU: the mean of the idle
// phase's power samples, the same field and the same kind of mean as the
// release window (windowPower), so a bias between the power field and the
// energy counter cancels in the release comparison. NaN for a GPU without
// an idle sample.
func (e *Exporter) baseline(r *run) []float64 {
	ph := r.phase(contract.Idle)
	if ph == nil || ph.end == nil || ph.start.left > 0 || ph.end.left > 0 || ph.end.t <= ph.start.t {
		return nil
	}
	b := make([]float64, len(e.gpus))
	for i := range b {
		switch {
		case !r.measured(i):
		case i < len(r.idleAcc) && r.idleAcc[i].n > 0:
			b[i] = r.idleAcc[i].mean
		default:
			b[i] = math.NaN()
		}
	}
	return b
}

// observeRuns runs release detection on every run in its release phase and
// ends the runs active longer than RunMaxAge.
func (e *Exporter) observeRuns(now int64) {
	for _, r := range e.runs {
		if r.active(contract.Release) && r.rel.state == phaseapi.ReleaseWaiting {
			e.checkRelease(r, now)
		}
		if !r.ended && len(r.phases) > 0 && time.Duration(now-r.phases[0].start.t) >= e.cfg.RunMaxAge {
			e.expire(r, now)
		}
	}
}

// expire ends run r, active longer than RunMaxAge (a client that died
// without ending it), so it never holds an active slot for good.
func (e *Exporter) expire(r *run, now int64) {
	if cur := r.current(); cur.end == nil {
		cur.end = e.newBoundary(now)
	}
	if r.rel.state == phaseapi.ReleaseWaiting {
		f := false
		r.rel.state, r.rel.closed, r.rel.holding = phaseapi.ReleaseTimedOut, &f, false
		r.rel.reason = fmt.Sprintf("run expired: active longer than %v", e.cfg.RunMaxAge)
	}
	e.finishRun(r, phaseapi.EndReasonExpired)
	e.log.Warn("run expired: still active after the run max age; ended", "run_id", r.id, "max_age", e.cfg.RunMaxAge)
}

// windowPower is GPU g's mean power over the release window ending at its
// latest sample: the mean of the power samples, not an energy-counter
// difference. A counter updating every ~100 ms, not on the sampler's grid,
// puts 9, 10 or 11 updates in a 1 s window, up to ±10% of the power at
// steady load, more than the ±5% tolerance; the samples carry no such
// staircase.
func (e *Exporter) windowPower(g *gpuState) float64 {
	if m, n := g.ring.meanPower(g.lastT-int64(e.cfg.ReleaseWindow), g.lastT); n > 0 {
		return m
	}
	return g.lastP
}

func (e *Exporter) checkRelease(r *run, now int64) {
	ph := r.current()
	base := e.baseline(r)
	var why string
	if base == nil {
		why = "no idle baseline (the run has no finished idle phase)"
	} else {
		for i, g := range e.gpus {
			if !r.measured(i) {
				continue
			}
			if !g.healthy || !g.has {
				why = fmt.Sprintf("gpu %d unhealthy: %s", i, g.lastErr)
				break
			}
			if e.sampling && e.stalled(g, now) {
				why = fmt.Sprintf("gpu %d not sampled for %v (a read hangs)", i, time.Duration(now-g.lastDone))
				break
			}
			if math.IsNaN(base[i]) {
				why = fmt.Sprintf("gpu %d has no power sample in the idle phase: no baseline", i)
				break
			}
			p := e.windowPower(g)
			if math.Abs(p-base[i]) > e.cfg.ReleaseTolerance*base[i] {
				why = fmt.Sprintf("gpu %d at %.1f W, baseline %.1f W (±%g%%)", i, p, base[i], e.cfg.ReleaseTolerance*100)
				break
			}
		}
	}
	r.crit.power.set(why == "", now, why)
	e.evalProcess(r, now)
	e.evalMemory(r, now)
	start, last, all := r.holdStart()
	if all {
		r.rel.holding, r.rel.holdStart = true, start
		if e.releaseHoldElapsed(start, now) {
			t := true
			ph.end = e.newBoundary(start)
			r.rel.state, r.rel.closed, r.rel.reason = phaseapi.ReleaseClosed, &t, ""
			r.crit.closedBy = last
			e.finishRun(r, phaseapi.EndReasonReleaseClosed)
			e.log.Info("release closed: engine gone, memory and power back at idle", "run_id", r.id, "end", e.wall(start), "closed_by", last, "process_basis", r.crit.processBasis)
			return
		}
	} else {
		r.rel.holding = false
		var whys []string
		for _, c := range []criterion{r.crit.process, r.crit.memory, r.crit.power} {
			if !c.met {
				whys = append(whys, c.why)
			}
		}
		why = strings.Join(whys, "; ")
		r.rel.reason = why
	}
	if time.Duration(now-ph.start.t) >= e.cfg.ReleaseMaxWait {
		f := false
		ph.end = e.newBoundary(now)
		r.rel.state, r.rel.closed, r.rel.holding = phaseapi.ReleaseTimedOut, &f, false
		if why == "" {
			why = "hold not complete"
		}
		r.rel.reason = fmt.Sprintf("release not closed within %v: %s", e.cfg.ReleaseMaxWait, why)
		e.finishRun(r, phaseapi.EndReasonReleaseTimedOut)
		e.log.Warn("release not closed", "run_id", r.id, "reason", r.rel.reason)
	}
}

// status builds the API document of run r. Called with e.mu held (read).
func (e *Exporter) status(r *run) phaseapi.RunStatus {
	st := phaseapi.RunStatus{RunID: r.id, State: phaseapi.RunActive, GPUs: e.runGPUInfos(r), Phases: []phaseapi.PhaseStatus{},
		EndReason: r.endReason, Gaps: r.gaps, Selector: r.selector, CoTenants: slices.Sorted(maps.Keys(r.coTenants))}
	if r.ended {
		st.State = phaseapi.RunEnded
	}
	for _, ph := range r.phases {
		ps := phaseapi.PhaseStatus{Phase: ph.phase, Start: e.unix(ph.start.t), Active: ph.end == nil && !r.ended, GPUs: []phaseapi.GPUEnergy{}}
		var endT int64
		if ph.end != nil {
			end := e.unix(ph.end.t)
			ps.End = &end
		}
		if ph.end != nil && ph.end.left == 0 {
			endT = ph.end.t
		} else {
			for _, g := range e.gpus {
				endT = max(endT, g.lastT)
			}
		}
		for i, g := range e.gpus {
			if !r.measured(i) {
				continue
			}
			en := e.phaseEnergy(ph, i)
			ps.EnergyJoules += en
			ps.GPUs = append(ps.GPUs, phaseapi.GPUEnergy{GPU: i, UUID: g.dev.UUID, EnergyJoules: en})
		}
		if d := float64(endT-ph.start.t) / 1e9; d > 0 {
			ps.AvgPowerWatts = ps.EnergyJoules / d
		}
		st.Phases = append(st.Phases, ps)
	}
	st.Idle = e.idleStatus(r)
	st.Release = phaseapi.ReleaseStatus{
		State: r.rel.state, Closed: r.rel.closed, Reason: r.rel.reason,
		Tolerance: e.cfg.ReleaseTolerance, HoldSec: e.cfg.ReleaseHold.Seconds(), MaxWait: e.cfg.ReleaseMaxWait.Seconds(),
	}
	if r.rel.holding || r.rel.state == phaseapi.ReleaseClosed {
		h := e.unix(r.rel.holdStart)
		st.Release.HoldStart = &h
	}
	if r.rel.state != phaseapi.ReleaseNotStarted {
		st.Release.Criteria = e.criteriaStatus(r)
	}
	if r.crit.closedBy != "" {
		st.Release.ClosedBy = r.crit.closedBy
		h := e.unix(r.rel.holdStart)
		st.Release.ClosedByAt = &h
	}
	return st
}

// idleStatus is the baseline and stability check, once the idle phase ended
// and its energy is resolved; nil before.
func (e *Exporter) idleStatus(r *run) *phaseapi.IdleStatus {
	base := e.baseline(r)
	if base == nil {
		return nil
	}
	is := &phaseapi.IdleStatus{Stable: true}
	var reasons []string
	for i, g := range e.gpus {
		if !r.measured(i) {
			continue
		}
		cv := r.idleAcc[i].cv()
		gb := phaseapi.GPUBaseline{GPU: i, UUID: g.dev.UUID, PowerWatts: base[i], CV: cv, Stable: true, ComputeProcesses: r.idleProcs[i]}
		if math.IsNaN(gb.PowerWatts) {
			gb.PowerWatts = 0 // no sample: flagged unstable below
		}
		switch {
		case math.IsNaN(cv):
			gb.CV, gb.Stable = 0, false
			reasons = append(reasons, fmt.Sprintf("gpu %d: fewer than 2 samples in idle", i))
		case cv >= e.cfg.IdleCVThreshold:
			gb.Stable = false
			reasons = append(reasons, fmt.Sprintf("gpu %d: power CV %.3f ≥ %g", i, cv, e.cfg.IdleCVThreshold))
		}
		if r.idleProcs[i] > 0 {
			gb.Stable = false
			reasons = append(reasons, fmt.Sprintf("gpu %d: %d compute process(es) during idle", i, r.idleProcs[i]))
		}
		is.Stable = is.Stable && gb.Stable
		is.Baseline = append(is.Baseline, gb)
	}
	is.Reason = strings.Join(reasons, "; ")
	return is
}

// gpuInfos lists the GPUs for the API.
func (e *Exporter) gpuInfos() []phaseapi.GPUInfo {
	out := make([]phaseapi.GPUInfo, len(e.gpus))
	for i, g := range e.gpus {
		out[i] = phaseapi.GPUInfo{GPU: i, UUID: g.dev.UUID, Name: g.dev.Name, DriverVersion: g.dev.DriverVersion,
			PowerSource: g.dev.PowerSource, EnergySource: g.dev.EnergySource, PowerScope: g.dev.PowerScope, EnergyScope: g.dev.EnergyScope,
			PCIBusID: g.dev.PCIBusID, MIGMode: g.dev.MIGMode, Healthy: g.healthy}
	}
	return out
}
