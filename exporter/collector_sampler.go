package exporter

import (
	"github.com/joulemark/joulemark/internal/contract"
	"github.com/prometheus/client_golang/prometheus"
)

type samplerCollector struct {
	e                                   *Exporter
	samples, errors, overruns, interval *prometheus.Desc
	last                                *prometheus.Desc
}

func newSamplerCollector(e *Exporter) *samplerCollector {
	return &samplerCollector{e: e,
		samples: prometheus.NewDesc(contract.SamplerSamples, "Power samples taken.", gpuLabels, nil),
		errors: prometheus.NewDesc(contract.SamplerErrors,
			"Failed or invalid GPU reads, by reason: read (a fast read failed), slow (a 1 Hz read failed), counter (the energy counter could not be read; the interval was integrated from power), invalid (a NaN, infinite or negative power), power_fallback (the power field failed and nvmlDeviceGetPowerUsage answered; joulemark_gpu_info's power_source names what it read).",
			[]string{"gpu", "uuid", "reason"}, nil),
		overruns: prometheus.NewDesc(contract.SamplerOverruns, "Sampling ticks missed, summed over the GPUs: each whole interval from a tick to the end of its sample (a slow read, a wait on the exporter's lock, a late start) is a tick dropped.", nil, nil),
		interval: prometheus.NewDesc(contract.SamplerInterval, "Configured fast sampling period.", nil, nil),
		last: prometheus.NewDesc(contract.GPULastSample,
			"When the GPU's latest good power sample was taken (unix seconds); stale while its reads fail or hang.", gpuLabels, nil),
	}
}

func (c *samplerCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.samples
	ch <- c.errors
	ch <- c.overruns
	ch <- c.interval
	ch <- c.last
}

// Collect is called by the gatherer with e.mu held (read): one snapshot.
func (c *samplerCollector) Collect(ch chan<- prometheus.Metric) {
	for _, g := range c.e.gpus {
		ch <- prometheus.MustNewConstMetric(c.samples, prometheus.CounterValue, float64(g.samples), g.idx, g.dev.UUID)
		for _, r := range errorReasons {
			ch <- prometheus.MustNewConstMetric(c.errors, prometheus.CounterValue, float64(g.errors[r]), g.idx, g.dev.UUID, r)
		}
		if g.has {
			ch <- prometheus.MustNewConstMetric(c.last, prometheus.GaugeValue, c.e.unix(g.lastT), g.idx, g.dev.UUID)
		}
	}
	ch <- prometheus.MustNewConstMetric(c.overruns, prometheus.CounterValue, float64(c.e.overruns))
	ch <- prometheus.MustNewConstMetric(c.interval, prometheus.GaugeValue, c.e.cfg.Interval.Seconds())
}
