package exporter

import (
	"github.com/joulemark/joulemark/internal/contract"
	"github.com/prometheus/client_golang/prometheus"
)

type powerCollector struct {
	e    *Exporter
	desc *prometheus.Desc
}

func newPowerCollector(e *Exporter) *powerCollector {
	return &powerCollector{e: e, desc: prometheus.NewDesc(contract.GPUPower,
		"Latest power sample (instant power where the GPU offers it).", gpuLabels, nil)}
}

func (c *powerCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

// Collect is called by the gatherer with e.mu held (read): one snapshot.
func (c *powerCollector) Collect(ch chan<- prometheus.Metric) {
	for _, g := range c.e.gpus {
		if g.has {
			ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, g.lastP, g.idx, g.dev.UUID)
		}
	}
}
