package simengine

import (
	"fmt"
	"slices"

	"github.com/joulemark/joulemark/internal/contract"
	"github.com/prometheus/client_golang/prometheus"
)

// engineHelp is each role's HELP text, vLLM's wording.
var engineHelp = map[contract.EngineRole]string{
	contract.RoleRunning:          "Number of requests in model execution batches.",
	contract.RoleWaiting:          "Number of requests waiting to be processed.",
	contract.RoleKVCache:          "KV-cache usage. 1 means 100 percent usage.",
	contract.RolePreemptions:      "Cumulative number of preemptions (recompute) from the engine.",
	contract.RoleRetractedNow:     "The number of retracted requests.",
	contract.RoleGenerationTokens: "Number of generation tokens processed.",
	contract.RolePromptTokens:     "Number of prefill tokens processed.",
	contract.RoleUsedTokens:       "The number of used tokens.",
	contract.RoleRequestSuccess:   "Count of successfully processed requests.",
	contract.RoleTTFT:             "Histogram of time to first token in seconds.",
	contract.RoleE2ELatency:       "Histogram of end to end request latency in seconds.",
}

// kvUsageOldHelp is the HELP of a KV-cache name after the dialect's first
// (vLLM's before V1).
const kvUsageOldHelp = "GPU KV-cache usage. 1 means 100 percent usage (vLLM < 0.10 name)."

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

// newMetrics registers the simulator's own metrics and, for each of the
// dialect's names in internal/contract, the engine metric of its role.
func newMetrics(e *Engine) (*metrics, error) {
	m := &metrics{
		aborted: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "joulemark_sim_engine_aborted_requests_total", Help: "Requests cancelled by the client, cut by a fault or aborted by a stop."}),
		faults: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "joulemark_sim_engine_faults_injected_total", Help: "Faults injected, by kind."}, []string{"kind"}),
	}
	for _, k := range []string{"error", "stall", "truncate", "slow_first_token"} {
		m.faults.WithLabelValues(k)
	}
	e.reg.MustRegister(m.aborted, m.faults,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: contract.SimEngineLoad, Help: "Power the current step draws on each of the engine's GPUs, as a share of the GPU's range above idle (the sim GPUs' load; 0 when idle)."},
			e.locked(func() float64 { return e.load })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: contract.SimEngineState, Help: "Engine state: 0 stopped, 1 loading weights, 2 running."},
			e.locked(func() float64 { return float64(e.state) })),
	)
	for _, em := range contract.EngineMetricsOf(e.cfg.Dialect) {
		c, err := m.engineMetric(e, em)
		if err != nil {
			return nil, err
		}
		e.reg.MustRegister(c)
	}
	if m.generationTokens == nil || m.promptTokens == nil || m.preemptions == nil || m.ttft == nil || m.e2e == nil {
		return nil, fmt.Errorf("simulated engine: dialect %s lacks a token, preemption or latency metric in internal/contract", e.cfg.Dialect)
	}
	return m, nil
}

// locked wraps f in the engine's lock.
func (e *Engine) locked(f func() float64) func() float64 {
	return func() float64 {
		e.mu.Lock()
		defer e.mu.Unlock()
		return f()
	}
}

// engineMetric is the collector of one engine metric, by its role.
func (m *metrics) engineMetric(e *Engine, em contract.EngineMetric) (prometheus.Collector, error) {
	model := prometheus.Labels{"model_name": e.cfg.Model}
	help := engineHelp[em.Role]
	gauge := func(f func() float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: em.Name, Help: help, ConstLabels: model}, e.locked(f))
	}
	counter := func() prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{Name: em.Name, Help: help, ConstLabels: model})
	}
	histogram := func(buckets []float64) prometheus.Histogram {
		return prometheus.NewHistogram(prometheus.HistogramOpts{Name: em.Name, Help: help, ConstLabels: model, Buckets: buckets})
	}
	switch em.Role {
	case contract.RoleRunning:
		return gauge(func() float64 { return float64(len(e.running)) }), nil
	case contract.RoleWaiting:
		return gauge(func() float64 { return float64(len(e.waiting)) }), nil
	case contract.RoleKVCache:
		if em.Name != contract.EngineName(em.Engine, em.Role) {
			help = kvUsageOldHelp
		}
		return gauge(func() float64 { return float64(e.kvBlocks) / float64(e.kvCapacity()) }), nil
	case contract.RoleUsedTokens:
		return gauge(func() float64 { return float64(e.kvBlocks * KVBlockSize) }), nil
	case contract.RoleRetractedNow:
		return gauge(func() float64 { return float64(e.retractedNow) }), nil
	case contract.RolePreemptions:
		m.preemptions = counter()
		return m.preemptions, nil
	case contract.RoleGenerationTokens:
		m.generationTokens = counter()
		return m.generationTokens, nil
	case contract.RolePromptTokens:
		m.promptTokens = counter()
		return m.promptTokens, nil
	case contract.RoleRequestSuccess:
		m.success = prometheus.NewCounterVec(prometheus.CounterOpts{Name: em.Name, Help: help, ConstLabels: model}, []string{"finished_reason"})
		for _, r := range []string{"stop", "length"} {
			m.success.WithLabelValues(r)
		}
		return m.success, nil
	case contract.RoleTTFT:
		m.ttft = histogram([]float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80})
		return m.ttft, nil
	case contract.RoleE2ELatency:
		m.e2e = histogram([]float64{0.3, 0.5, 0.8, 1, 1.5, 2, 2.5, 5, 10, 15, 20, 30, 40, 50, 60, 120})
		return m.e2e, nil
	}
	return nil, fmt.Errorf("simulated engine: no metric for %s (role %s)", em.Name, em.Role)
}

// validDialect checks a Config.Dialect.
func validDialect(d string) error {
	if !slices.Contains(contract.Engines, d) {
		return fmt.Errorf("dialect %q: want %s or %s", d, contract.EngineVLLM, contract.EngineSGLang)
	}
	return nil
}
