package exporter

import "github.com/prometheus/client_golang/prometheus"

type phaseCollector struct {
	e                             *Exporter
	active, start, end, energyDsc *prometheus.Desc
}

func newPhaseCollector(e *Exporter) *phaseCollector {
	l := []string{"run_id", "phase"}
	return &phaseCollector{e: e,
		active: prometheus.NewDesc("joulemark_phase_active", "1 while the lifecycle phase runs, 0 after.", l, nil),
		start:  prometheus.NewDesc("joulemark_phase_start_timestamp_seconds", "Exact start of the phase (unix seconds).", l, nil),
		end:    prometheus.NewDesc("joulemark_phase_end_timestamp_seconds", "Exact end of the phase (unix seconds); absent while it runs.", l, nil),
		energyDsc: prometheus.NewDesc("joulemark_phase_energy_joules",
			"GPU energy over the exact phase, integrated at the exporter from the high-rate samples (up to the latest sample while the phase runs).",
			[]string{"run_id", "phase", "gpu", "uuid"}, nil),
	}
}

func (c *phaseCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.active
	ch <- c.start
	ch <- c.end
	ch <- c.energyDsc
}

func (c *phaseCollector) Collect(ch chan<- prometheus.Metric) {
	e := c.e
	e.mu.RLock()
	defer e.mu.RUnlock()
	for _, r := range e.runs {
		for _, ph := range r.phases {
			p := string(ph.phase)
			active := 0.0
			if ph.end == nil && !r.ended {
				active = 1
			}
			ch <- prometheus.MustNewConstMetric(c.active, prometheus.GaugeValue, active, r.id, p)
			ch <- prometheus.MustNewConstMetric(c.start, prometheus.GaugeValue, e.unix(ph.start.t), r.id, p)
			if ph.end != nil {
				ch <- prometheus.MustNewConstMetric(c.end, prometheus.GaugeValue, e.unix(ph.end.t), r.id, p)
			}
			for i, g := range e.gpus {
				ch <- prometheus.MustNewConstMetric(c.energyDsc, prometheus.GaugeValue, e.phaseEnergy(ph, i), r.id, p, g.idx, g.dev.UUID)
			}
		}
	}
}
