package exporter

import "github.com/prometheus/client_golang/prometheus"

type infoCollector struct {
	e    *Exporter
	desc *prometheus.Desc
}

func newInfoCollector(e *Exporter) *infoCollector {
	return &infoCollector{e: e, desc: prometheus.NewDesc("joulemark_gpu_info",
		"What is measured and how: power_source is instant, average or sim; energy_source is counter (the GPU's energy counter) or integrated (trapezoid of power samples).",
		[]string{"gpu", "uuid", "name", "driver_version", "power_source", "energy_source"}, nil)}
}

func (c *infoCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *infoCollector) Collect(ch chan<- prometheus.Metric) {
	for _, g := range c.e.gpus { // immutable after New
		d := g.dev
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, 1, g.idx, d.UUID, d.Name, d.DriverVersion, d.PowerSource, d.EnergySource)
	}
}
