package exporter

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/joulemark/joulemark/internal/contract"
	"github.com/joulemark/joulemark/internal/gpu"
	"github.com/joulemark/joulemark/internal/phaseapi"
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
	endReason string         // contract.EndReason*, once ended
	gaps      []phaseapi.Gap // intervals the exporter was down, or a GPU missing after a restart
	// absent are the run's GPUs not open at a restart, by index, until they
	// open with their saved UUID (absentgpu.go).
	absent map[int]*absence
	// failed are the run's GPUs out since a read failed or hung, by index,
	// each with its open gap's index in gaps (gpufail.go).
	failed map[int]int

	gpus     []bool             // GPUs measured, nil: every GPU (selector.go)
	selected bool               // the first phase carried a selector
	selector *phaseapi.Selector // that selector, for the API
	// coTenants are the other pods seen holding the run's GPUs (pod
	// selector only; selector.go).
	coTenants map[string]bool
	// heldWhilePending are the pods seen holding each GPU (by index) while
	// the run waited for its pod (pending): once it resolves, those that
	// held its GPUs become co-tenants (selector.go).
	heldWhilePending map[int]map[string]bool
}

// pending says the run's pod selector waits for its pod to hold GPUs
// here (a lifecycle's engine starts after the idle baseline): it measures
// every GPU until then, and publishes no per-GPU phase energy.
func (r *run) pending() bool { return r.selector != nil && !r.selected }

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
	if r.active(contract.Idle) && !r.lost(i) {
		r.idleAcc[i].add(p)
	}
}

func (r *run) onSlow(i int, s gpu.SlowSample) {
	if !r.active(contract.Idle) || r.lost(i) {
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

// errKind is why a request was refused; api.go's httpStatus maps each
// kind to the API's HTTP status. A byte, so that an HTTP status code
// passed for a kind (400 and up) does not compile.
type errKind uint8

// The kinds of refusal.
const (
	errBadRequest  errKind = iota + 1 // the request is malformed
	errNotFound                       // no such run
	errConflict                       // the request contradicts the run's state
	errTooLarge                       // the request body is too long
	errTooManyRuns                    // the most active runs are kept already
	errUnavailable                    // the change could not be saved: retry
)

// apiError is a refused request: its kind and the message the client sees.
type apiError struct {
	// podAbsent: a pod selector matched no pod holding GPUs here (a
	// lifecycle's engine pod may appear later: lifecycle.selectGPUs).
	podAbsent bool
	kind      errKind
	msg       string
}

func (e *apiError) Error() string { return e.msg }

func errf(kind errKind, format string, args ...any) *apiError {
	return &apiError{kind: kind, msg: fmt.Sprintf(format, args...)}
}

// status builds the API document of run r. Called with e.mu held (read).
func (e *Exporter) status(r *run) phaseapi.RunStatus {
	st := phaseapi.RunStatus{RunID: r.id, State: phaseapi.RunActive, GPUs: e.runGPUInfos(r), Phases: []phaseapi.PhaseStatus{},
		EndReason: r.endReason, Gaps: e.runGaps(r), Selector: r.selector, CoTenants: slices.Sorted(maps.Keys(r.coTenants)), SelectorPending: r.pending()}
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
		latest := e.unix(endT)
		for i := range e.gpus {
			if !r.measured(i) {
				continue
			}
			en := e.lc.phaseEnergy(r, ph, i)
			ps.EnergyJoules += en
			ps.GPUs = append(ps.GPUs, phaseapi.GPUEnergy{GPU: i, UUID: e.runUUID(r, i), EnergyJoules: en,
				MissingSeconds: missingSeconds(st.Gaps, i, ps.Start, *cmp.Or(ps.End, &latest))})
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
	base := e.lc.baseline(r)
	if base == nil {
		return nil
	}
	is := &phaseapi.IdleStatus{Stable: true}
	var reasons []string
	for i := range e.gpus {
		if !r.measured(i) {
			continue
		}
		cv := r.idleAcc[i].cv()
		gb := phaseapi.GPUBaseline{GPU: i, UUID: e.runUUID(r, i), PowerWatts: base[i], CV: cv, Stable: true, ComputeProcesses: r.idleProcs[i]}
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

// cloneGaps copies gaps, their GPU lists included, so a status outlives
// the lock it was built under.
func cloneGaps(gaps []phaseapi.Gap) []phaseapi.Gap {
	out := slices.Clone(gaps)
	for i := range out {
		out[i].EnergyBridgedGPUs = slices.Clone(out[i].EnergyBridgedGPUs)
		out[i].GPUs = slices.Clone(out[i].GPUs)
	}
	return out
}
