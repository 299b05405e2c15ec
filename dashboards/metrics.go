package dashboards

// The metric names the dashboards may query. A test parses every PromQL
// expression of every dashboard and fails when it names a metric that is in
// none of these lists nor among the recording rules in rules/*.yml.

// ContractMetrics are the exporter and per-request metrics of the v1 metric
// contract (docs/design.md). They are public API: stable names.
var ContractMetrics = []string{
	// Exporter, per GPU.
	"joulemark_gpu_info",
	"joulemark_gpu_power_watts",
	"joulemark_gpu_energy_joules_total",
	"joulemark_gpu_memory_used_bytes",
	"joulemark_gpu_utilization_ratio",
	"joulemark_gpu_temperature_celsius",
	"joulemark_gpu_power_limit_watts",
	"joulemark_gpu_sm_clock_hertz",
	"joulemark_sampler_samples_total",
	"joulemark_sampler_errors_total",
	"joulemark_sampler_overruns_total",
	// Exporter, lifecycle.
	"joulemark_phase_active",
	"joulemark_phase_start_timestamp_seconds",
	"joulemark_phase_end_timestamp_seconds",
	"joulemark_phase_energy_joules",
	"joulemark_run_baseline_power_watts",
	"joulemark_run_release_closed",
	// Exporter, energy per pod (kubelet PodResources).
	"joulemark_gpu_allocation_info",
	"joulemark_pod_energy_joules_total",
	"joulemark_pod_energy_attribution_info",
	"joulemark_unallocated_energy_joules_total",
	"joulemark_kubelet_up",
	// Benchmark job, one sample per request (remote write, timestamp = request end).
	"joulemark_request_output_tokens",
	"joulemark_request_input_tokens",
	"joulemark_request_ttft_seconds",
	"joulemark_request_latency_seconds",
	"joulemark_request_success",
}

// HostMetrics are the exporter's host energy metrics (RAPL powercap zones,
// docs/exporter.md "Host energy").
var HostMetrics = []string{
	"joulemark_host_energy_joules_total",
	"joulemark_host_energy_unavailable",
	"joulemark_phase_host_energy_joules",
}

// BenchMetric is one benchmark-job aggregate the dashboards read.
type BenchMetric struct {
	Name   string
	Type   string // "counter", "gauge" or "histogram"
	Labels []string
	Help   string
}

// BenchAggregateMetrics are the aggregates the benchmark job writes beside
// the per-request samples (docs/design.md: "requests by outcome, TTFT/TPOT/latency
// histograms, in-flight gauge, target and achieved rate"). The contract names
// them only by what they mean; this one list holds the names the dashboards
// query, taken from benchjob's metric constants (benchjob/metrics.go), so a
// rename there is reconciled here. Histograms are queried through their
// _bucket and _count series; their phase label is warmup or formal.
var BenchAggregateMetrics = []BenchMetric{
	{"joulemark_bench_requests_total", "counter", []string{"run_id", "outcome"}, "requests finished, by outcome (success or the error class)"},
	{"joulemark_bench_output_tokens_total", "counter", []string{"run_id", "phase"}, "output tokens of successful requests"},
	{"joulemark_bench_ttft_seconds", "histogram", []string{"run_id", "phase"}, "time to first token of successful requests"},
	{"joulemark_bench_tpot_seconds", "histogram", []string{"run_id", "phase"}, "time per output token after the first, of successful requests"},
	{"joulemark_bench_latency_seconds", "histogram", []string{"run_id", "phase"}, "end-to-end latency of every request, failures included"},
	{"joulemark_bench_requests_in_flight", "gauge", []string{"run_id"}, "requests sent and not yet finished"},
	{"joulemark_bench_target_rate_requests_per_second", "gauge", []string{"run_id"}, "request rate the open loop aims at (0 for a closed loop)"},
	{"joulemark_bench_achieved_rate_requests_per_second", "gauge", []string{"run_id"}, "requests sent per second since the formal phase started"},
}

// EngineMetrics are documented vLLM metric names
// (https://docs.vllm.ai/en/stable/usage/metrics/). vllm:gpu_cache_usage_perc
// is the name before vLLM V1 renamed it vllm:kv_cache_usage_perc; the
// dashboards query both.
var EngineMetrics = []EngineMetric{
	{"vllm:num_requests_running", "gauge"},
	{"vllm:num_requests_waiting", "gauge"},
	{"vllm:kv_cache_usage_perc", "gauge"},
	{"vllm:gpu_cache_usage_perc", "gauge"},
	{"vllm:generation_tokens_total", "counter"},
	{"vllm:prompt_tokens_total", "counter"},
	{"vllm:num_preemptions_total", "counter"},
}

// EngineMetric is one documented inference-engine metric.
type EngineMetric struct {
	Name string
	Type string
}

// KnownMetrics returns every metric name the dashboards may query outside
// the recording rules, with the series names of histograms
// (_bucket, _sum, _count) expanded.
func KnownMetrics() map[string]bool {
	known := map[string]bool{}
	for _, m := range append(ContractMetrics, HostMetrics...) {
		known[m] = true
	}
	add := func(name, typ string) {
		if typ == "histogram" {
			for _, s := range []string{"_bucket", "_sum", "_count"} {
				known[name+s] = true
			}
			return
		}
		known[name] = true
	}
	for _, m := range BenchAggregateMetrics {
		add(m.Name, m.Type)
	}
	for _, m := range EngineMetrics {
		add(m.Name, m.Type)
	}
	return known
}
