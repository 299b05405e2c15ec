package exporter

import (
	"github.com/joulemark/joulemark/internal/contract"
	"github.com/prometheus/client_golang/prometheus"
)

type infoCollector struct {
	e    *Exporter
	desc *prometheus.Desc
}

func newInfoCollector(e *Exporter) *infoCollector {
	return &infoCollector{e: e, desc: prometheus.NewDesc(contract.GPUInfo,
		"What is measured and how: power_source is instant, average or sim (the readings': after 10 reads in a row from a fallback source, after the power field failed, that source; a single fallback read does not change it and counts in joulemark_sampler_errors_total reason power_fallback); energy_source is counter (the GPU's energy counter) or integrated (trapezoid of power samples); power_scope and energy_scope are gpu (the GPU board) or module (the whole C2C module, Grace CPU and memory included); pci_bus_id is stable across reboots, unlike gpu; mig_mode is enabled, disabled or unsupported (power and energy are whole-GPU either way).",
		[]string{"gpu", "uuid", "name", "driver_version", "power_source", "energy_source", "power_scope", "energy_scope", "pci_bus_id", "mig_mode"}, nil)}
}

func (c *infoCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

// Collect is called by the gatherer with e.mu held (read): one snapshot.
func (c *infoCollector) Collect(ch chan<- prometheus.Metric) {
	for _, g := range c.e.gpus {
		d := g.dev
		src := d.PowerSource
		if g.lastSource != "" {
			src = g.lastSource // the readings fell back to another source for a while
		}
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, 1, g.idx, d.UUID, d.Name, d.DriverVersion,
			src, d.EnergySource, d.PowerScope, d.EnergyScope, d.PCIBusID, d.MIGMode)
	}
}
