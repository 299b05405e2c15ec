// Package report is the report.json format: its types, the file names of
// a report directory, one atomic writer and one reader (FORMAT.md). The
// analysis (analyze) produces it; runset, runset/compare, production and cmd read
// it without the analysis.
package report

import "github.com/joulemark/joulemark/internal/stats"

// Report is report.json. Its JSON keys are public API (docs/design.md, "Report (report.json) — stable keys").
// Times are unix seconds; energies joules; powers watts. A figure that could
// not be computed is null (a nil pointer), never 0.
type Report struct {
	RunID                       string           `json:"run_id"`
	Run                         *RunIdentity     `json:"run,omitempty"`          // what was tested; absent when unknown
	Mode                        string           `json:"mode"`                   // lifecycle or attached (contract.Mode*)
	ModeSource                  string           `json:"mode_source"`            // run_identity, phase_markers or default
	NotMeasured                 []string         `json:"not_measured,omitempty"` // attached: idle_baseline, startup, release, full_lifecycle
	Valid                       bool             `json:"valid"`
	Flags                       []Flag           `json:"flags"`
	Stages                      map[string]Stage `json:"stages"` // idle, startup, warmup, formal, release
	Energy                      Energy           `json:"energy"`
	Release                     Release          `json:"release"`
	Requests                    Requests         `json:"requests"`
	Tokens                      Tokens           `json:"tokens"`
	ThroughputTokensPerSecond   *float64         `json:"throughput_tokens_per_second"`
	OutputSanity                *OutputSanity    `json:"output_sanity,omitempty"` // only when the bench archive was given
	AvgGPUPowerWatts            *float64         `json:"avg_gpu_power_watts"`
	FullLifecycleJoulesPerToken *float64         `json:"full_lifecycle_joules_per_token"`
	SteadyState                 SteadyState      `json:"steady_state"`
	Latency                     Latency          `json:"latency"`
	Goodput                     Goodput          `json:"goodput"`
	LifecycleEstimate           LifecycleEst     `json:"lifecycle_estimate"`
	Intervals                   Intervals        `json:"intervals"`                // 95% confidence intervals of the headline figures
	Cost                        *Cost            `json:"cost,omitempty"`           // money and carbon, with their boundary; only with cost inputs
	PrefillDecode               *PrefillDecode   `json:"prefill_decode,omitempty"` // J per prefill and per decode token from a power regression
	Measurement                 Measurement      `json:"measurement"`
	UnattributedJoules          *float64         `json:"unattributed_joules,omitempty"`
	EnergyPerGPU                []GPUEnergy      `json:"energy_per_gpu,omitempty"`
	GPUMemory                   *GPUMemory       `json:"gpu_memory,omitempty"`
	HostEnergy                  *HostEnergy      `json:"host_energy,omitempty"`
	Quality                     *Quality         `json:"quality,omitempty"`   // answers checked against their rubric (archive)
	Server                      *Server          `json:"server,omitempty"`    // the engine's view of the formal phase
	Diagnosis                   *Diagnosis       `json:"diagnosis,omitempty"` // why it behaved so, with evidence // RAPL host energy beside the GPUs'; null figures with a reason when unavailable
	Scenario                    string           `json:"scenario,omitempty"`
	GeneratedBy                 string           `json:"generated_by,omitempty"`
}

// Flag is one validity finding. Excluding flags make the run invalid.
type Flag struct {
	Code      string `json:"code"` // e.g. release_not_closed, steady_state_not_reached
	Message   string `json:"message"`
	Excluding bool   `json:"excluding"`
}

// Stage is one lifecycle phase's boundaries and energy.
type Stage struct {
	Start           float64  `json:"start"`
	End             float64  `json:"end"`
	DurationSeconds float64  `json:"duration_seconds"`
	EnergyJoules    *float64 `json:"energy_joules"`
	AvgPowerWatts   *float64 `json:"avg_power_watts"`
	// The two ways of measuring the stage energy: the energy counter
	// interpolated at the boundaries (energy_joules when present) and the
	// exporter's joulemark_phase_energy_joules; their |a−b|/max(|a|,|b|).
	CounterEnergyJoules     *float64 `json:"counter_energy_joules"`
	ExporterEnergyJoules    *float64 `json:"exporter_energy_joules"`
	EnergyDisagreementRatio *float64 `json:"energy_disagreement_ratio"`
	// CounterResolutionJoules bounds how far the counter figure can be off
	// from sampling resolution alone (interpolation between counter samples
	// at the two boundaries, plus counter staleness); a disagreement within
	// it is not flagged.
	CounterResolutionJoules *float64 `json:"counter_resolution_joules,omitempty"`
}

// Energy holds the lifecycle energy totals. Startup = startup + warm-up.
type Energy struct {
	StartupJoules   *float64 `json:"startup_joules"`
	FormalJoules    *float64 `json:"formal_joules"`
	ReleaseJoules   *float64 `json:"release_joules"`
	LifecycleJoules *float64 `json:"lifecycle_joules"`
}

// Release says whether power came back to the idle baseline.
type Release struct {
	Closed bool `json:"closed"`
	// ClosedBy is the criterion met last (process: the engine gone,
	// memory: back to idle, power: back to the baseline), ClosedByAt when
	// (unix seconds: the release's end); absent from older exporters.
	ClosedBy   string   `json:"closed_by,omitempty"`
	ClosedByAt *float64 `json:"closed_by_at,omitempty"`
	// ProcessBasis is what the process criterion was judged from, the
	// weakest over the exporters (engine_exit: the bench's report;
	// nvml_processes: NVML's process list; unverified: neither), from the
	// run archive's phases.json; absent without one.
	ProcessBasis string `json:"process_basis,omitempty"`
}

// Requests counts the formal requests.
type Requests struct {
	Started   int     `json:"started"`
	Succeeded int     `json:"succeeded"`
	Failed    int     `json:"failed"`
	ErrorRate float64 `json:"error_rate"`
}

// Tokens counts the formal tokens of successful requests.
type Tokens struct {
	FormalOutput int64 `json:"formal_output"`
	FormalInput  int64 `json:"formal_input"`
}

// SteadyState is the steady-state window and its J/token.
type SteadyState struct {
	Reached        bool     `json:"reached"`
	Reason         string   `json:"reason,omitempty"`
	FirstRequest   *int     `json:"first_request"`
	LastRequest    *int     `json:"last_request"`
	Start          *float64 `json:"start"`
	End            *float64 `json:"end"`
	EnergyJoules   *float64 `json:"energy_joules"`
	OutputTokens   *int64   `json:"output_tokens"`
	JoulesPerToken *float64 `json:"joules_per_token"`
	Requests       *int     `json:"requests"` // last_request − first_request + 1
	// DrainRequests are the last successful requests, ended after the last
	// formal send (the drain): the windows are tested before them; the
	// steady state still runs to the formal stage's end.
	DrainRequests int `json:"drain_requests"`
	// SustainedLoadJoulesPerToken is the same J/token without the drain:
	// the steady-state requests that ended by the last formal send, all
	// run under the full offered load (docs/design.md, "Definitions");
	// SustainedLoadRequests counts them. Null when there are none.
	SustainedLoadJoulesPerToken *float64 `json:"sustained_load_joules_per_token"`
	SustainedLoadRequests       *int     `json:"sustained_load_requests"`
	Window                      int      `json:"window"`
	Windows                     int      `json:"windows"`
	CVThreshold                 float64  `json:"cv_threshold"`
	// Weighting is how a request counts in a window's CV: "tokens" (by its
	// output tokens) or "requests" (alike).
	Weighting string `json:"weighting"`
	// WindowCV is the largest CV of the tested windows at the steady
	// state's first request, or at the best start when it was not reached
	// (what the test compared with CVThreshold); nil when no start could be
	// tested.
	WindowCV *float64 `json:"window_cv"`
}

// Latency holds TTFT, TPOT and end-to-end latency percentiles.
type Latency struct {
	TTFTSeconds    stats.Percentiles `json:"ttft_seconds"`
	TPOTSeconds    stats.Percentiles `json:"tpot_seconds"`
	LatencySeconds stats.Percentiles `json:"latency_seconds"`
	// FailedRequests counted as infinitely slow in every percentile: a
	// percentile that lands on one is null.
	FailedRequests int `json:"failed_requests"`
}

// Goodput is the share of started requests that succeeded and met every SLO.
type Goodput struct {
	TTFTSLOSeconds     *float64 `json:"ttft_slo_seconds"`
	TPOTSLOSeconds     *float64 `json:"tpot_slo_seconds"`
	GoodRequests       int      `json:"good_requests"`
	Ratio              *float64 `json:"ratio"`
	JoulesPerGoodToken *float64 `json:"joules_per_good_token"`
}

// LifecycleEst is E(N) = E_start + N·e_ss + E_release for N = formal requests.
type LifecycleEst struct {
	FixedOverheadJoules *float64 `json:"fixed_overhead_joules"`
	PerRequestJoules    *float64 `json:"per_request_joules"`
	// Requests is N, the formal requests started; the fixed overhead per
	// request is (E_start + E_release)/N.
	Requests                      int      `json:"requests"`
	FixedOverheadPerRequestJoules *float64 `json:"fixed_overhead_per_request_joules"`
}

// Measurement says what was measured and how well.
type Measurement struct {
	EnergySource          string   `json:"energy_source"`
	SampleIntervalSeconds *float64 `json:"sample_interval_seconds"`
	CoverageRatio         *float64 `json:"coverage_ratio"`
	// CoverageSeries says which samples the coverage (and power) come
	// from: "raw" (the exporter's pushed high-rate series), "scraped", or
	// "mixed" (some GPUs or series each way).
	CoverageSeries string `json:"coverage_series,omitempty"`
	Boundary       string `json:"boundary"` // "GPU board energy only"
	GPUs           int    `json:"gpus"`
	// GPUUUIDs are the GPUs measured: every GPU of the run's exporters, or
	// those its first phase selected.
	GPUUUIDs []string `json:"gpu_uuids"`
	Gaps     []Gap    `json:"gaps,omitempty"`
	// FromArchive lists what came from the bench archive's phases.json
	// because Prometheus lacked it (a boundary not yet scraped, markers
	// lost in an outage); WaitedSeconds how long analyze waited for the
	// run's final samples. Both absent when not the case.
	FromArchive   []string `json:"from_archive,omitempty"`
	WaitedSeconds *float64 `json:"waited_for_samples_seconds,omitempty"`
}

// Boundary is the measurement boundary every figure carries, and
// BoundaryModule the one where an exporter measured a C2C module (Grace
// Hopper, Grace Blackwell: energy_scope="module").
const (
	Boundary       = "GPU board energy only"
	BoundaryModule = "GPU module incl. CPU (C2C module energy: Grace CPU and its memory included)"
)

// Gap is a stretch of a series with no sample for longer than twice its
// median sample interval.
type Gap struct {
	GPU    string  `json:"gpu"`
	Series string  `json:"series"` // energy or power
	Start  float64 `json:"start"`
	End    float64 `json:"end"`
}
