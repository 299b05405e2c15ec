package exporter

import (
	"github.com/joulemark/joulemark/internal/contract"
	"github.com/prometheus/client_golang/prometheus"
)

type energyCollector struct {
	e             *Exporter
	energy, reset *prometheus.Desc
	rejected      *prometheus.Desc
}

func newEnergyCollector(e *Exporter) *energyCollector {
	return &energyCollector{e: e,
		energy: prometheus.NewDesc(contract.GPUEnergy,
			"GPU energy counted by the exporter (continued across restarts from --storage.path, the downtime counted by the GPU's own counter where it did not reset, else not counted): energy-counter deltas where the GPU has a counter (see joulemark_gpu_info energy_source), else trapezoid integration of the power samples; counter resets are bridged.", gpuLabels, nil),
		reset: prometheus.NewDesc(contract.GPUEnergyResets,
			"Times the GPU's energy counter went back (driver reload, reset); the interval was integrated from power instead.", gpuLabels, nil),
		rejected: prometheus.NewDesc(contract.GPUCounterRejected,
			"Energy counter deltas rejected as implausible: more than twice the GPU's power limit over the elapsed time plus 200 ms (a bogus read); the interval was integrated from power instead.", gpuLabels, nil),
	}
}

func (c *energyCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.energy
	ch <- c.reset
	ch <- c.rejected
}

// Collect is called by the gatherer with e.mu held (read): one snapshot.
func (c *energyCollector) Collect(ch chan<- prometheus.Metric) {
	for _, g := range c.e.gpus {
		if g.restored != nil && g.restored.hide {
			continue // may go back to 0 at the first sample (store_restore.go)
		}
		ch <- prometheus.MustNewConstMetric(c.energy, prometheus.CounterValue, g.energy, g.idx, g.dev.UUID)
		if g.counter {
			ch <- prometheus.MustNewConstMetric(c.reset, prometheus.CounterValue, float64(g.resets), g.idx, g.dev.UUID)
			ch <- prometheus.MustNewConstMetric(c.rejected, prometheus.CounterValue, float64(g.rejected), g.idx, g.dev.UUID)
		}
	}
}
