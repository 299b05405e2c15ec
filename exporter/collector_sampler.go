package exporter

import "github.com/prometheus/client_golang/prometheus"

type samplerCollector struct {
	e                                   *Exporter
	samples, errors, overruns, interval *prometheus.Desc
	last                                *prometheus.Desc
}

func newSamplerCollector(e *Exporter) *samplerCollector {
	return &samplerCollector{e: e,
		samples: prometheus.NewDesc("joulemark_sampler_samples_total", "Power samples taken.", gpuLabels, nil),
		errors: prometheus.NewDesc("joulemark_sampler_errors_total",
			"Failed or invalid GPU reads, by reason: read (a fast read failed), slow (a 1 Hz read failed), counter (the energy counter could not be read; the interval was integrated from power), invalid (a NaN, infinite or negative power), power_fallback (the power field failed and nvmlDeviceGetPowerUsage answered; joulemark_gpu_info's power_source names what it read).",
			[]string{"gpu", "uuid", "reason"}, nil),
		overruns: prometheus.NewDesc("joulemark_sampler_overruns_total", "Sampling periods missed because one GPU read took longer than the interval (all GPUs).", nil, nil),
		interval: prometheus.NewDesc("joulemark_sampler_interval_seconds", "Configured fast sampling period.", nil, nil),
		last: prometheus.NewDesc("joulemark_gpu_last_sample_timestamp_seconds",
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

func (c *samplerCollector) Collect(ch chan<- prometheus.Metric) {
	c.e.mu.RLock()
	defer c.e.mu.RUnlock()
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
