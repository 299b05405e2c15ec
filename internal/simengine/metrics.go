package simengine

import (
	"fmt"

	"github.com/joulemark/joulemark/internal/contract"
	"github.com/prometheus/client_golang/prometheus"
)

// Dialects: whose metric names /metrics speaks.
const (
	DialectVLLM   = "vllm"
	DialectSGLang = "sglang"
)

// dialectNames are each dialect's names by role: vLLM's from
// https://docs.vllm.ai/en/stable/usage/metrics/, SGLang's from
// python/sglang/srt/metrics/collector.py (SGLang calls preemptions
// retractions). An empty name: the dialect has no such metric.
var dialectNames = map[string]map[string]string{
	DialectVLLM: {
		"running": "vllm:num_requests_running", "waiting": "vllm:num_requests_waiting",
		"kv_usage": "vllm:kv_cache_usage_perc", "kv_usage_old": "vllm:gpu_cache_usage_perc",
		"preemptions": "vllm:num_preemptions_total", "generation": "vllm:generation_tokens_total",
		"prompt": "vllm:prompt_tokens_total", "success": "vllm:request_success_total",
		"ttft": "vllm:time_to_first_token_seconds", "e2e": "vllm:e2e_request_latency_seconds",
	},
	DialectSGLang: {
		"running": "sglang:num_running_reqs", "waiting": "sglang:num_queue_reqs",
		"kv_usage": "sglang:token_usage", "used_tokens": "sglang:num_used_tokens",
		"preemptions": "sglang:num_retracted_requests_total", "retracted_now": "sglang:num_retracted_reqs",
		"generation": "sglang:generation_tokens_total", "prompt": "sglang:prompt_tokens_total",
		"ttft": "sglang:time_to_first_token_seconds", "e2e": "sglang:e2e_request_latency_seconds",
	},
}

type metrics struct {
	generationTokens prometheus.Counter
	promptTokens     prometheus.Counter
	success          *prometheus.CounterVec // nil in SGLang's dialect
	preemptions      prometheus.Counter
	aborted          prometheus.Counter
	faults           *prometheus.CounterVec
	ttft             prometheus.Histogram
	e2e              prometheus.Histogram
}

func newMetrics(e *Engine) *metrics {
	n := dialectNames[e.cfg.Dialect]
	model := prometheus.Labels{"model_name": e.cfg.Model}
	locked := func(f func() float64) func() float64 {
		return func() float64 {
			e.mu.Lock()
			defer e.mu.Unlock()
			return f()
		}
	}
	gauge := func(name, help string, f func() float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help, ConstLabels: model}, locked(f))
	}
	kvUsage := func() float64 { return float64(e.kvBlocks) / float64(e.kvCapacity()) }
	m := &metrics{
		generationTokens: prometheus.NewCounter(prometheus.CounterOpts{
			Name: n["generation"], Help: "Number of generation tokens processed.", ConstLabels: model}),
		promptTokens: prometheus.NewCounter(prometheus.CounterOpts{
			Name: n["prompt"], Help: "Number of prefill tokens processed.", ConstLabels: model}),
		preemptions: prometheus.NewCounter(prometheus.CounterOpts{
			Name: n["preemptions"], Help: "Cumulative number of preemptions (recompute) from the engine.", ConstLabels: model}),
		aborted: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "joulemark_sim_engine_aborted_requests_total", Help: "Requests cancelled by the client, cut by a fault or aborted by a stop."}),
		faults: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "joulemark_sim_engine_faults_injected_total", Help: "Faults injected, by kind."}, []string{"kind"}),
		ttft: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: n["ttft"], Help: "Histogram of time to first token in seconds.", ConstLabels: model,
			Buckets: []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80}}),
		e2e: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: n["e2e"], Help: "Histogram of end to end request latency in seconds.", ConstLabels: model,
			Buckets: []float64{0.3, 0.5, 0.8, 1, 1.5, 2, 2.5, 5, 10, 15, 20, 30, 40, 50, 60, 120}}),
	}
	for _, k := range []string{"error", "stall", "truncate", "slow_first_token"} {
		m.faults.WithLabelValues(k)
	}
	e.reg.MustRegister(m.preemptions, m.generationTokens, m.promptTokens, m.aborted, m.faults, m.ttft, m.e2e,
		gauge(n["running"], "Number of requests in model execution batches.", func() float64 { return float64(len(e.running)) }),
		gauge(n["waiting"], "Number of requests waiting to be processed.", func() float64 { return float64(len(e.waiting)) }),
		gauge(n["kv_usage"], "KV-cache usage. 1 means 100 percent usage.", kvUsage),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: contract.SimEngineLoad, Help: "Power the current step draws on each of the engine's GPUs, as a share of the GPU's range above idle (the sim GPUs' load; 0 when idle)."},
			locked(func() float64 { return e.load })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: contract.SimEngineState, Help: "Engine state: 0 stopped, 1 loading weights, 2 running."},
			locked(func() float64 { return float64(e.state) })),
	)
	switch e.cfg.Dialect {
	case DialectVLLM:
		m.success = prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: n["success"], Help: "Count of successfully processed requests.", ConstLabels: model}, []string{"finished_reason"})
		for _, r := range []string{"stop", "length"} {
			m.success.WithLabelValues(r)
		}
		e.reg.MustRegister(m.success, gauge(n["kv_usage_old"], "GPU KV-cache usage. 1 means 100 percent usage (vLLM < 0.10 name).", kvUsage))
	case DialectSGLang:
		e.reg.MustRegister(
			gauge(n["used_tokens"], "The number of used tokens.", func() float64 { return float64(e.kvBlocks * KVBlockSize) }),
			gauge(n["retracted_now"], "The number of retracted requests.", func() float64 { return float64(e.retractedNow) }))
	}
	return m
}

// validDialect checks a Config.Dialect.
func validDialect(d string) error {
	if _, ok := dialectNames[d]; !ok {
		return fmt.Errorf("dialect %q: want %s or %s", d, DialectVLLM, DialectSGLang)
	}
	return nil
}
