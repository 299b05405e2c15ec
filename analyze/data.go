package analyze

import (
	"slices"

	"github.com/joulemark/joulemark/internal/contract"
)

// Sample is one raw sample: T in unix seconds, V its value.
type Sample struct {
	T, V float64
}

// GPUSeries holds the raw series of one GPU over the run, as Prometheus
// stored them.
type GPUSeries struct {
	GPU          string
	UUID         string
	Instance     string
	EnergySource string // joulemark_gpu_info energy_source: counter or integrated
	// EnergyScope is joulemark_gpu_info energy_scope: gpu (the board) or
	// module (a C2C module, Grace CPU and memory included); "" from
	// exporters before the label.
	EnergyScope string
	Energy      []Sample // joulemark_gpu_energy_joules_total, time ordered
	// EnergyRaw is true when Energy holds the exporter's high-rate counter
	// samples (joulemark_gpu_energy_sample_joules_total) instead of scrapes.
	EnergyRaw bool
	Power     []Sample // joulemark_gpu_power_watts, time ordered
	// PowerRaw is true when Power holds the exporter's high-rate power
	// samples (joulemark_gpu_power_sample_watts) instead of scrapes.
	PowerRaw bool
	Memory   []Sample // joulemark_gpu_memory_used_bytes, time ordered
	// Utilization is joulemark_gpu_utilization_ratio, time ordered.
	Utilization []Sample
}

// Label names a GPU in messages and plots.
func (g GPUSeries) Label() string {
	l := "gpu " + g.GPU
	if g.Instance != "" {
		l = g.Instance + " " + l
	}
	return l
}

// Request is one benchmark request reconstructed from its per-request
// samples: End is the sample timestamp, Send = End − latency. (48 bytes
// and no pointer, the token counts 32-bit (at most
// contract.MaxRequestTokens), the slot a rank and the booleans together:
// a million of them in a long run, which the collector need not scan.)
type Request struct {
	Send         float64
	End          float64
	TTFT         float64
	Latency      float64
	OutputTokens int32
	InputTokens  int32
	// SlotRank is the rank of the request's slot label among the run's
	// slot labels in string order (SlotRanks): it orders the requests
	// that end and were sent at the same time.
	SlotRank int32
	HasTTFT  bool
	Success  bool
	Formal   bool // of the formal phase (phase="formal"), else of the warm-up
}

// SlotRanks maps each of slots (labels, repeats allowed) to its rank among
// the distinct ones in string order, Request.SlotRank.
func SlotRanks(slots []string) map[string]int32 {
	distinct := slices.Compact(slices.Sorted(slices.Values(slots)))
	ranks := make(map[string]int32, len(distinct))
	for i, s := range distinct {
		ranks[s] = int32(i)
	}
	return ranks
}

// FirstToken is Send + TTFT: the first token's time, valid when HasTTFT.
func (r *Request) FirstToken() float64 { return r.Send + r.TTFT }

// Interruption is a killed or aborted run's end (clampInterrupted).
type Interruption struct {
	Status string // runarchive.StatusKilled or StatusAborted
	// CutSeconds is how much of the recorded formal phase followed its
	// last request (0: none was cut).
	CutSeconds float64
}

// PhaseBounds are the exact boundaries of one lifecycle phase.
type PhaseBounds struct {
	Start, End       float64
	HasStart, HasEnd bool
}

// RunData is everything the computation needs about one run. Loader fills it
// from Prometheus; tests fill it by hand.
type RunData struct {
	// ExporterRestarts are the intervals an exporter of the run was down
	// (the archive's phases.json gaps), [start, end] in unix seconds.
	ExporterRestarts [][2]float64
	// Client is what the bench reported of its own load (the archive's
	// manifest); nil without the archive.
	Client *ClientReport

	RunID         string
	Phases        map[string]PhaseBounds // idle, startup, warmup, formal, release
	PhaseEnergy   map[string]float64     // exporter's joulemark_phase_energy_joules summed over GPUs
	ReleaseClosed *bool                  // joulemark_run_release_closed; nil when absent
	// ReleaseClosedBy is the release criterion met last (process, memory,
	// power) and ReleaseClosedAt when; from exporters that report it.
	ReleaseClosedBy string
	ReleaseClosedAt *float64
	// RestartedPhases are the phases whose start timestamp took more than
	// one value under this run id: more than one lifecycle used the id.
	RestartedPhases []string
	GPUs            []GPUSeries
	Requests        []Request
	// SamplerIntervalSeconds is the exporters' fast sampling period
	// (joulemark_sampler_interval_seconds, largest over the run's exporters);
	// 0 when unknown. A scraped counter can be this much older than its
	// scrape timestamp.
	SamplerIntervalSeconds float64
	// Engine is the engine's own metrics (vLLM, SGLang); nil when not read.
	Engine *EngineData
	// Host is the host energy (RAPL) the exporters published; nil when none.
	Host *HostData
	// RunInfo is the bench job's joulemark_run_info; nil when absent.
	RunInfo *contract.RunIdentity
	// FromArchive lists what was taken from the bench archive's
	// phases.json because Prometheus lacked it ("formal end", "release
	// verdict", ...); WaitedSeconds how long the loader waited for the
	// run's final samples (nil: it did not).
	FromArchive   []string
	WaitedSeconds *float64
	// Mode, when set, is the run's mode from its archive (manifest run_info
	// or the bench's no_lifecycle flag); else RunInfo's, else inferred.
	Mode string
	// RequestsFromArchive, when set, says the requests come from the run's
	// archive and what Prometheus held instead (crossCheck).
	RequestsFromArchive string
	// Interrupted, when set, says the run was killed or aborted (its
	// archive's status): its formal phase ends at its last request.
	Interrupted *Interruption
	// ArchiveMismatch, when set, says Prometheus holds more requests than
	// the run's archive (crossCheck): the requests stay Prometheus'.
	ArchiveMismatch string
	// InvalidValues are the metrics of which Prometheus answered
	// impossible values (NaN, ±Inf, a negative phase energy), left out,
	// each "metric: count".
	InvalidValues []string
	// IncompleteRequests counts per-request sample groups that lacked a
	// required sample (latency, output tokens or success).
	IncompleteRequests int
	// ReadAPI is how the raw series were read: remoteread.Remote or
	// remoteread.Query; ReadFallback why remote read was given up
	// (Config.ReadAPI auto).
	ReadAPI, ReadFallback string
}

// ClientReport is the bench's report on whether it offered its load: its
// CPU use and, for an open loop, its dispatch lag, with the flags it set
// (contract.FlagClientCPU, contract.FlagClientLag).
type ClientReport struct {
	CPURatio      float64
	LagP99Seconds float64
	MaxLagSeconds float64 // 0: unknown or no limit
	CPUSaturated  bool
	Lagging       bool
}
