package contract

// Exporter metrics, per GPU (labels gpu, uuid).
const (
	GPUInfo             = "joulemark_gpu_info"
	GPUUp               = "joulemark_gpu_up"
	GPUPower            = "joulemark_gpu_power_watts"
	GPUPowerAverage     = "joulemark_gpu_power_average_watts"
	GPUEnergy           = "joulemark_gpu_energy_joules_total"
	GPUEnergyResets     = "joulemark_gpu_energy_resets_total"
	GPUCounterRejected  = "joulemark_gpu_energy_rejected_total"
	GPUMemoryUsed       = "joulemark_gpu_memory_used_bytes"
	GPUUtilization      = "joulemark_gpu_utilization_ratio"
	GPUTemperature      = "joulemark_gpu_temperature_celsius"
	GPUPowerLimit       = "joulemark_gpu_power_limit_watts"
	GPUSMClock          = "joulemark_gpu_sm_clock_hertz"
	GPUClockEventActive = "joulemark_gpu_clock_event_active"
	GPULastSample       = "joulemark_gpu_last_sample_timestamp_seconds"
	GPUSampleDuration   = "joulemark_gpu_sample_duration_seconds"
	SamplerSamples      = "joulemark_sampler_samples_total"
	SamplerErrors       = "joulemark_sampler_errors_total"
	SamplerOverruns     = "joulemark_sampler_overruns_total"
	SamplerInterval     = "joulemark_sampler_interval_seconds"
	// The raw high-rate samples, by remote write only (never scraped).
	GPUPowerSample  = "joulemark_gpu_power_sample_watts"
	GPUEnergySample = "joulemark_gpu_energy_sample_joules_total"
)

// Exporter metrics, lifecycle (labels run_id, phase).
const (
	PhaseActive        = "joulemark_phase_active"
	PhaseStart         = "joulemark_phase_start_timestamp_seconds"
	PhaseEnd           = "joulemark_phase_end_timestamp_seconds"
	PhaseEnergy        = "joulemark_phase_energy_joules"
	RunBaselinePower   = "joulemark_run_baseline_power_watts"
	RunIdleStable      = "joulemark_run_idle_stable"
	RunReleaseClosed   = "joulemark_run_release_closed"
	RunReleaseClosedBy = "joulemark_run_release_closed_by_timestamp_seconds"
	RunInfo            = "joulemark_run_info"
	// The cost inputs: gauges the operator defines (a constant recording
	// rule, or a live series), which the cost recording rules multiply by.
	CostPricePerKWh     = "joulemark_energy_price_per_kwh"
	CostPUE             = "joulemark_pue"
	CostCarbonIntensity = "joulemark_carbon_intensity_gco2e_per_kwh"
	PhaseHostEnergy     = "joulemark_phase_host_energy_joules"
	HostEnergy          = "joulemark_host_energy_joules_total"
	HostEnergyUp        = "joulemark_host_energy_up"
	HostEnergyUnavail   = "joulemark_host_energy_unavailable"
	HostEnergyWraps     = "joulemark_host_energy_wraps_total"
	GPUAllocationInfo   = "joulemark_gpu_allocation_info"
	PodEnergy           = "joulemark_pod_energy_joules_total"
	PodAttributionInfo  = "joulemark_pod_energy_attribution_info"
	UnallocatedEnergy   = "joulemark_unallocated_energy_joules_total"
	KubeletUp           = "joulemark_kubelet_up"
	KubeletErrors       = "joulemark_kubelet_errors_total"
	RemoteWriteSent     = "joulemark_remote_write_samples_sent_total"
	RemoteWriteDropped  = "joulemark_remote_write_samples_dropped_total"
	RemoteWriteFailed   = "joulemark_remote_write_samples_failed_total"
	RemoteWriteRetries  = "joulemark_remote_write_retries_total"
	RemoteWritePending  = "joulemark_remote_write_pending_samples"
	ExporterAPIRequests = "joulemark_exporter_api_requests_total"
	ExporterScrapeTime  = "joulemark_exporter_scrape_duration_seconds"
	ExporterAuthFailed  = "joulemark_exporter_auth_failures_total"
	ExporterStoreErrors = "joulemark_exporter_storage_errors_total"
	ExporterClockSteps  = "joulemark_exporter_clock_steps_total"
	ExporterBuildInfo   = "joulemark_exporter_build_info"
)

// Benchmark job, one sample per request (remote write, timestamp = request
// end; labels run_id, phase, slot).
const (
	RequestOutputTokens = "joulemark_request_output_tokens"
	RequestInputTokens  = "joulemark_request_input_tokens"
	RequestTTFT         = "joulemark_request_ttft_seconds"
	RequestLatency      = "joulemark_request_latency_seconds"
	RequestSuccess      = "joulemark_request_success"
)

// Benchmark job aggregates for dashboards (label run_id).
const (
	BenchRequests     = "joulemark_bench_requests_total"
	BenchOutputTokens = "joulemark_bench_output_tokens_total"
	BenchTTFT         = "joulemark_bench_ttft_seconds"
	BenchTPOT         = "joulemark_bench_tpot_seconds"
	BenchLatency      = "joulemark_bench_latency_seconds"
	BenchInFlight     = "joulemark_bench_requests_in_flight"
	BenchTargetRate   = "joulemark_bench_target_rate_requests_per_second"
	BenchAchievedRate = "joulemark_bench_achieved_rate_requests_per_second"
)

// MetricDesc describes one metric once: what its collector registers, the
// dashboards query and the docs list.
type MetricDesc struct {
	Name   string
	Type   string // "counter", "gauge" or "histogram"
	Help   string
	Labels []string
}

// BenchAggregates are the benchmark job's aggregates for dashboards
// (docs/bench.md's table, checked by a test). Histograms are queried
// through their _bucket and _count series; their phase is warmup or formal.
var BenchAggregates = []MetricDesc{
	{BenchRequests, "counter", "Requests finished, by outcome (success or the error class).", []string{LabelRunID, "outcome"}},
	{BenchOutputTokens, "counter", "Output tokens of successful requests.", []string{LabelRunID, LabelPhase}},
	{BenchTTFT, "histogram", "Time to first token of successful requests.", []string{LabelRunID, LabelPhase}},
	{BenchTPOT, "histogram", "Time per output token after the first, of successful requests.", []string{LabelRunID, LabelPhase}},
	{BenchLatency, "histogram", "End-to-end latency of every request, failures included.", []string{LabelRunID, LabelPhase}},
	{BenchInFlight, "gauge", "Requests sent and not yet finished.", []string{LabelRunID}},
	{BenchTargetRate, "gauge", "Request rate the open loop aims at (0 for a closed loop).", []string{LabelRunID}},
	{BenchAchievedRate, "gauge", "Requests sent per second since the formal phase started.", []string{LabelRunID}},
}

// BenchAggregate is the descriptor of the aggregate named name; false
// when there is none.
func BenchAggregate(name string) (MetricDesc, bool) {
	for _, d := range BenchAggregates {
		if d.Name == name {
			return d, true
		}
	}
	return MetricDesc{}, false
}

// The simulated engine's coupling to the simulated GPU (its /metrics).
const (
	SimEngineLoad  = "joulemark_sim_engine_load_ratio"
	SimEngineState = "joulemark_sim_engine_state"
)

// Metrics is every name above: the metric contract that docs/design.md
// lists, checked both ways by a test.
var Metrics = []string{
	GPUInfo, GPUUp, GPUPower, GPUPowerAverage, GPUEnergy, GPUEnergyResets, GPUCounterRejected,
	GPUMemoryUsed, GPUUtilization, GPUTemperature, GPUPowerLimit, GPUSMClock,
	GPUClockEventActive, GPULastSample, GPUSampleDuration,
	SamplerSamples, SamplerErrors, SamplerOverruns, SamplerInterval,
	GPUPowerSample, GPUEnergySample,
	PhaseActive, PhaseStart, PhaseEnd, PhaseEnergy, RunBaselinePower, RunIdleStable,
	RunReleaseClosed, RunReleaseClosedBy, RunInfo,
	CostPricePerKWh, CostPUE, CostCarbonIntensity,
	PhaseHostEnergy, HostEnergy, HostEnergyUp, HostEnergyUnavail, HostEnergyWraps,
	GPUAllocationInfo, PodEnergy, PodAttributionInfo, UnallocatedEnergy, KubeletUp, KubeletErrors,
	RemoteWriteSent, RemoteWriteDropped, RemoteWriteFailed, RemoteWriteRetries, RemoteWritePending,
	ExporterAPIRequests, ExporterScrapeTime, ExporterAuthFailed, ExporterStoreErrors, ExporterClockSteps, ExporterBuildInfo,
	RequestOutputTokens, RequestInputTokens, RequestTTFT, RequestLatency, RequestSuccess,
	BenchRequests, BenchOutputTokens, BenchTTFT, BenchTPOT, BenchLatency, BenchInFlight,
	BenchTargetRate, BenchAchievedRate,
	SimEngineLoad, SimEngineState,
}

// Label names of the contract.
const (
	LabelGPU   = "gpu"
	LabelUUID  = "uuid"
	LabelRunID = "run_id"
	LabelPhase = "phase"
	LabelSlot  = "slot"
)

// MaxRequestTokens bounds any token count of one request (2^24, above every
// context length served today): the bench refuses a larger usage count,
// analyze a larger per-request token sample.
const MaxRequestTokens = 1 << 24

// UsageSlack is how many completion tokens a usage block may report beyond
// what it can account for (the request's max_tokens, or the bytes of text
// streamed: a token carries at least one) before it is not believed: 16
// tokens or a tenth of max_tokens, whichever is more (an engine that
// counts a stop token or a rejected speculative token stays believed).
func UsageSlack(maxTokens int) int { return max(16, maxTokens/10) }
