package exporter

import "github.com/prometheus/client_golang/prometheus"

type samplerCollector struct {
	e                                   *Exporter
	samples, errors, overruns, interval *prometheus.Desc
}

func newSamplerCollector(e *Exporter) *samplerCollector {
	return &samplerCollector{e: e,
		samples:  prometheus.NewDesc("joulemark_sampler_samples_total", "Power samples taken.", gpuLabels, nil),
		errors:   prometheus.NewDesc("joulemark_sampler_errors_total", "Failed or invalid GPU reads (fast and slow).", gpuLabels, nil),
		overruns: prometheus.NewDesc("joulemark_sampler_overruns_total", "Sampling periods missed because one sampling pass took longer than the interval.", nil, nil),
		interval: prometheus.NewDesc("joulemark_sampler_interval_seconds", "Configured fast sampling period.", nil, nil),
	}
}

func (c *samplerCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.samples
	ch <- c.errors
	ch <- c.overruns
	ch <- c.interval
}

func (c *samplerCollector) Collect(ch chan<- prometheus.Metric) {
	c.e.mu.RLock()
	defer c.e.mu.RUnlock()
	for _, g := range c.e.gpus {
		ch <- prometheus.MustNewConstMetric(c.samples, prometheus.CounterValue, float64(g.samples), g.idx, g.dev.UUID)
		ch <- prometheus.MustNewConstMetric(c.errors, prometheus.CounterValue, float64(g.errors), g.idx, g.dev.UUID)
	}
	ch <- prometheus.MustNewConstMetric(c.overruns, prometheus.CounterValue, float64(c.e.overruns))
	ch <- prometheus.MustNewConstMetric(c.interval, prometheus.GaugeValue, c.e.cfg.Interval.Seconds())
}
