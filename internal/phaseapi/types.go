package phaseapi

import "github.com/joulemark/joulemark/internal/contract"

// Timestamps in these documents are unix seconds as float64 (sub-millisecond
// precision), the same values the exporter publishes in
// joulemark_phase_{start,end}_timestamp_seconds.

// Run states.
const (
	RunActive = "active" // a phase is running
	RunEnded  = "ended"  // closed by POST .../end or by release detection
)

// Release states.
const (
	ReleaseNotStarted = "not_started" // the release phase has not begun
	ReleaseWaiting    = "waiting"     // power not yet back at baseline, or hold not yet complete
	ReleaseClosed     = "closed"      // every GPU back within tolerance and held
	ReleaseTimedOut   = "timed_out"   // max wait passed; joulemark_run_release_closed 0
)

// RunStatus is what GET /api/v1/runs/{run_id} returns, and what the phase and
// end endpoints return after they act.
type RunStatus struct {
	RunID   string        `json:"run_id"`
	State   string        `json:"state"`
	Phases  []PhaseStatus `json:"phases"`
	Idle    *IdleStatus   `json:"idle,omitempty"`
	Release ReleaseStatus `json:"release"`
	// GPUs are the GPUs the run measures: every GPU of the exporter, or
	// those its first phase selected (Selector).
	GPUs []GPUInfo `json:"gpus"`
	// Selector is the first phase's GPU selector, nil when none.
	Selector *Selector `json:"selector,omitempty"`
	// EndReason says what ended the run (contract.EndReasons); empty while
	// it is active.
	EndReason string `json:"end_reason,omitempty"`
	// Gaps are intervals of the run the exporter did not measure (it was
	// down, or one of the run's GPUs did not open at its restart): no power
	// was sampled; energy is counted over them only on the GPUs listed in
	// each gap's EnergyBridgedGPUs.
	Gaps []Gap `json:"gaps,omitempty"`
	// CoTenants are the other pods ("namespace/pod") the kubelet listed as
	// holding one of the GPUs of a run selected by pod, while it ran:
	// their GPU energy is in the run's.
	CoTenants []string `json:"co_tenants,omitempty"`
	// SelectorPending: the first phase's pod selector matched no pod
	// holding GPUs here yet; the run measures every GPU until a later
	// phase carrying the selector resolves it (by the warm-up at the
	// latest, else that phase is refused).
	SelectorPending bool `json:"selector_pending,omitempty"`
}

// Gap is an interval of a run without measurements, unix seconds.
type Gap struct {
	Start  float64 `json:"start"`
	End    float64 `json:"end"`
	Reason string  `json:"reason"`
	// EnergyBridgedGPUs are the run's GPUs (indexes) whose own energy
	// counter gave the gap's energy, which the run's phases then count;
	// over the others' gap no energy is counted.
	EnergyBridgedGPUs []int `json:"energy_bridged_gpus,omitempty"`
	// GPUs are the run's GPUs (indexes) the gap is about; empty: all of
	// them. A GPU's own gap is one that did not open at the exporter's
	// restart: it lasts from the last save until the GPU opened again with
	// the same UUID, or, when it did not (another GPU opened in its place,
	// or none), until the run's end.
	GPUs []int `json:"gpus,omitempty"`
	// VanishedUUIDs are GPUs of the run the gap is about (as GPUs), named
	// by UUID because they were not found at a later restart of the
	// exporter (matched by UUID: a GPU count that changed, e.g. 8 → 7
	// after a reboot): the run goes on without them, their energy is not in
	// the run's, and the gap that starts at the last save before that
	// restart lasts until the run's end. With GPUs and VanishedUUIDs empty
	// the gap is about every GPU.
	VanishedUUIDs []string `json:"vanished_uuids,omitempty"`
	// Open is set while the gap goes on (its GPUs are still missing and the
	// run is active): End is then the time of the status.
	Open bool `json:"open,omitempty"`
}

// Preflight is what GET /api/v1/preflight returns: proof that the token
// (and TLS, basic auth) are accepted, that the run id is still free on this
// exporter, and the GPUs it measures.
type Preflight struct {
	RunID string    `json:"run_id,omitempty"`
	GPUs  []GPUInfo `json:"gpus"`
	// Pod and PodGPUs answer ?pod=namespace/name (or namespace/prefix*):
	// the pod resolved and the GPU UUIDs it holds here (a pod the exporter
	// cannot resolve is a 422).
	Pod     string   `json:"pod,omitempty"`
	PodGPUs []string `json:"pod_gpus,omitempty"`
	// PodPending answers ?pod=…&wait=1 when the pod holds no GPU here yet
	// (a lifecycle's engine starts after the idle baseline): the run will
	// wait for it (RunStatus.SelectorPending).
	PodPending bool `json:"pod_pending,omitempty"`
	// AllocationsKnown says the exporter knows which pods hold its GPUs
	// (the kubelet's PodResources, --sim.allocations); Pods lists them
	// then: a run should measure only its engine's pod's GPUs.
	AllocationsKnown bool      `json:"allocations_known,omitempty"`
	Pods             []PodGPUs `json:"pods,omitempty"`
}

// PodGPUs is a pod ("namespace/name") and the UUIDs of the GPUs it holds.
type PodGPUs struct {
	Pod  string   `json:"pod"`
	GPUs []string `json:"gpus"`
}

// PhaseStatus is one phase of a run with its exact boundaries and energy.
type PhaseStatus struct {
	Phase contract.Phase `json:"phase"`
	// Start and End are unix seconds; End is nil while the phase runs.
	Start  float64  `json:"start"`
	End    *float64 `json:"end,omitempty"`
	Active bool     `json:"active"`
	// EnergyJoules is the sum over GPUs, integrated at the exporter from the
	// high-rate samples (trapezoid, linear interpolation at the boundaries);
	// for an active phase it runs up to the latest sample.
	EnergyJoules  float64     `json:"energy_joules"`
	AvgPowerWatts float64     `json:"avg_power_watts"`
	GPUs          []GPUEnergy `json:"gpus"`
}

// GPUEnergy is one GPU's energy over a phase.
type GPUEnergy struct {
	GPU          int     `json:"gpu"`
	UUID         string  `json:"uuid"`
	EnergyJoules float64 `json:"energy_joules"`
	// MissingSeconds is how much of the phase lies in a gap of this GPU's
	// own (Gap.GPUs): the GPU was not open after an exporter restart, and
	// EnergyJoules counts its energy there only when the gap lists it in
	// EnergyBridgedGPUs.
	MissingSeconds float64 `json:"missing_seconds,omitempty"`
}

// IdleStatus is the idle baseline and its stability check.
type IdleStatus struct {
	Stable   bool          `json:"stable"`
	Reason   string        `json:"reason,omitempty"`
	Baseline []GPUBaseline `json:"baseline"`
}

// GPUBaseline is one GPU's idle baseline power.
type GPUBaseline struct {
	GPU        int     `json:"gpu"`
	UUID       string  `json:"uuid"`
	PowerWatts float64 `json:"power_watts"`
	// CV is the coefficient of variation of power over the idle phase.
	CV     float64 `json:"cv"`
	Stable bool    `json:"stable"`
	// ComputeProcesses is the count of compute processes seen during idle, or
	// -1 where the backend cannot tell.
	ComputeProcesses int `json:"compute_processes"`
}

// ReleaseStatus is the release-detection state of a run.
type ReleaseStatus struct {
	State string `json:"state"`
	// Closed is set once release ended: true when power came back to baseline
	// and held, false when the maximum wait passed.
	Closed *bool  `json:"closed,omitempty"`
	Reason string `json:"reason,omitempty"`
	// HoldStart is when the current (or final) hold within tolerance began,
	// unix seconds; the release phase ends there when it closes.
	HoldStart *float64 `json:"hold_start,omitempty"`
	Tolerance float64  `json:"tolerance"`
	HoldSec   float64  `json:"hold_seconds"`
	MaxWait   float64  `json:"max_wait_seconds"`
	// Criteria are the method's release criteria (engine process gone, GPU
	// memory back to idle, power back to the baseline) and since when each
	// is met; the hold begins when the last of them is met.
	Criteria []ReleaseCriterion `json:"criteria,omitempty"`
	// ClosedBy names the criterion met last when the release closed
	// (process, memory or power), and ClosedByAt when (unix seconds): the
	// release phase's end.
	ClosedBy   string   `json:"closed_by,omitempty"`
	ClosedByAt *float64 `json:"closed_by_at,omitempty"`
}

// Release criteria.
const (
	CriterionProcess = "process" // the engine exited (reported by the bench), or no more compute processes on the run's GPUs than at idle
	CriterionMemory  = "memory"  // GPU memory in use back within tolerance of the idle phase's
	CriterionPower   = "power"   // power back within tolerance of the idle baseline
)

// ReleaseCriterion is one release criterion.
type ReleaseCriterion struct {
	Name string `json:"name"`
	Met  bool   `json:"met"`
	// Since is when it was last met since (unix seconds), nil while not met.
	Since  *float64 `json:"since,omitempty"`
	Reason string   `json:"reason,omitempty"`
	// Basis is what the process criterion was judged from: BasisEngineExit,
	// BasisNVML or BasisUnverified (empty for the other criteria).
	Basis string `json:"basis,omitempty"`
}

// Bases of the process criterion.
const (
	// BasisEngineExit: the bench reported the engine process's exit.
	BasisEngineExit = "engine_exit"
	// BasisNVML: NVML lists no more compute processes on the run's GPUs
	// than during the idle phase (no lifecycle control).
	BasisNVML = "nvml_processes"
	// BasisUnverified: no run GPU could list its processes (NVML answered
	// NO_PERMISSION or not supported) and no exit was reported: met without
	// evidence. --release.require-engine-exit refuses it.
	BasisUnverified = "unverified"
)

// GPUInfo identifies a GPU and says how it is measured; GET /api/v1/gpus
// returns a list of them.
type GPUInfo struct {
	GPU           int    `json:"gpu"`
	UUID          string `json:"uuid"`
	Name          string `json:"name"`
	DriverVersion string `json:"driver_version"`
	PowerSource   string `json:"power_source"`  // e.g. "instant", "average", "sim"
	EnergySource  string `json:"energy_source"` // "counter" or "integrated"
	// PowerScope and EnergyScope are "gpu" (the GPU board) or "module" (a
	// C2C module, Grace CPU and memory included).
	PowerScope  string `json:"power_scope,omitempty"`
	EnergyScope string `json:"energy_scope,omitempty"`
	PCIBusID    string `json:"pci_bus_id,omitempty"`
	MIGMode     string `json:"mig_mode,omitempty"`
	Healthy     bool   `json:"healthy"`
}

// Error is the JSON body of every non-2xx API answer.
type Error struct {
	Error string `json:"error"`
}

// Selector is the optional body of a run's first phase POST: the run then
// measures only these GPUs (phase energy, baseline, release). GPUs are
// UUIDs; Pod ("namespace/name") is resolved through the kubelet's GPU
// allocation on the exporter. Without one a run measures every GPU.
type Selector struct {
	GPUs []string `json:"gpus,omitempty"`
	Pod  string   `json:"pod,omitempty"`
}

// Empty says the selector selects nothing (every GPU).
func (s Selector) Empty() bool { return len(s.GPUs) == 0 && s.Pod == "" }
