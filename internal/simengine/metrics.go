package simengine

import (
	"github.com/joulemark/joulemark/internal/contract"
	"github.com/prometheus/client_golang/prometheus"
)

type metrics struct {
	generationTokens prometheus.Counter
	promptTokens     prometheus.Counter
	success          *prometheus.CounterVec
	aborted          prometheus.Counter
	faults           *prometheus.CounterVec
	ttft             prometheus.Histogram
	e2e              prometheus.Histogram
}

func newMetrics(e *Engine) *metrics {
	model := prometheus.Labels{"model_name": e.cfg.Model}
	locked := func(f func() float64) func() float64 {
		return func() float64 {
			e.mu.Lock()
			defer e.mu.Unlock()
			return f()
		}
	}
	kvUsage := locked(func() float64 { return float64(e.kvUsed) / float64(e.cfg.KVCacheTokens) })
	m := &metrics{
		generationTokens: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "vllm:generation_tokens_total", Help: "Number of generation tokens processed.", ConstLabels: model}),
		promptTokens: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "vllm:prompt_tokens_total", Help: "Number of prefill tokens processed.", ConstLabels: model}),
		success: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vllm:request_success_total", Help: "Count of successfully processed requests.", ConstLabels: model},
			[]string{"finished_reason"}),
		aborted: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "joulemark_sim_engine_aborted_requests_total", Help: "Requests cancelled by the client, cut by a fault or aborted by a stop."}),
		faults: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "joulemark_sim_engine_faults_injected_total", Help: "Faults injected, by kind."}, []string{"kind"}),
		ttft: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "vllm:time_to_first_token_seconds", Help: "Histogram of time to first token in seconds.", ConstLabels: model,
			Buckets: []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80}}),
		e2e: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "vllm:e2e_request_latency_seconds", Help: "Histogram of end to end request latency in seconds.", ConstLabels: model,
			Buckets: []float64{0.3, 0.5, 0.8, 1, 1.5, 2, 2.5, 5, 10, 15, 20, 30, 40, 50, 60, 120}}),
	}
	for _, k := range []string{"error", "stall", "truncate", "slow_first_token"} {
		m.faults.WithLabelValues(k)
	}
	for _, r := range []string{"stop", "length"} {
		m.success.WithLabelValues(r)
	}
	// The simulator reserves a sequence's whole KV footprint on admission, so
	// it never preempts; the counter is there (at 0) because dashboards plot it.
	preemptions := prometheus.NewCounter(prometheus.CounterOpts{
		Name: "vllm:num_preemptions_total", Help: "Cumulative number of preemptions from the engine (always 0: the simulator reserves KV cache on admission).", ConstLabels: model})
	e.reg.MustRegister(
		preemptions, m.generationTokens, m.promptTokens, m.success, m.aborted, m.faults, m.ttft, m.e2e,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "vllm:num_requests_running", Help: "Number of requests in model execution batches.", ConstLabels: model},
			locked(func() float64 { return float64(len(e.running)) })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "vllm:num_requests_waiting", Help: "Number of requests waiting to be processed.", ConstLabels: model},
			locked(func() float64 { return float64(len(e.waiting)) })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "vllm:gpu_cache_usage_perc", Help: "GPU KV-cache usage. 1 means 100 percent usage (vLLM < 0.10 name).", ConstLabels: model},
			kvUsage),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "vllm:kv_cache_usage_perc", Help: "KV-cache usage. 1 means 100 percent usage.", ConstLabels: model},
			kvUsage),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: contract.SimEngineLoad, Help: "Batch utilisation of the current step: sequences in the step / max batch (0 when idle)."},
			locked(func() float64 { return e.load })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: contract.SimEngineState, Help: "Engine state: 0 stopped, 1 loading weights, 2 running."},
			locked(func() float64 { return float64(e.state) })),
	)
	return m
}
