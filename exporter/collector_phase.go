package exporter

import (
	"github.com/joulemark/joulemark/internal/contract"
	"github.com/prometheus/client_golang/prometheus"
)

type phaseCollector struct {
	e                             *Exporter
	active, start, end, energyDsc *prometheus.Desc
	hostEnergy                    *prometheus.Desc
}

func newPhaseCollector(e *Exporter) *phaseCollector {
	l := []string{"run_id", "phase"}
	return &phaseCollector{e: e,
		active:     prometheus.NewDesc(contract.PhaseActive, familyHelp[contract.PhaseActive], l, nil),
		start:      prometheus.NewDesc(contract.PhaseStart, familyHelp[contract.PhaseStart], l, nil),
		end:        prometheus.NewDesc(contract.PhaseEnd, familyHelp[contract.PhaseEnd], l, nil),
		energyDsc:  prometheus.NewDesc(contract.PhaseEnergy, familyHelp[contract.PhaseEnergy], []string{"run_id", "phase", "gpu", "uuid"}, nil),
		hostEnergy: prometheus.NewDesc(contract.PhaseHostEnergy, familyHelp[contract.PhaseHostEnergy], []string{"run_id", "phase", "zone", "domain"}, nil),
	}
}

func (c *phaseCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.active
	ch <- c.start
	ch <- c.end
	ch <- c.energyDsc
	ch <- c.hostEnergy
}

// Collect serves the runs not frozen yet; frozen (finished) runs are served
// from their cache by the exporter's gatherer.
func (c *phaseCollector) Collect(ch chan<- prometheus.Metric) { c.e.collectLive(ch, c.emitRun) }

// collectLive sends what emitRun emits for each run not frozen yet. Called
// with e.mu held (read) by the gatherer.
func (e *Exporter) collectLive(ch chan<- prometheus.Metric, emitRun func(*run, func(string, prometheus.Metric))) {
	emit := func(_ string, m prometheus.Metric) { ch <- m }
	for _, r := range e.lc.runs {
		if r.frozen == nil {
			emitRun(r, emit)
		}
	}
}

// emitRun emits run r's phase metrics. Called with e.mu held.
func (c *phaseCollector) emitRun(r *run, emit func(family string, m prometheus.Metric)) {
	e := c.e
	for _, ph := range r.phases {
		p := string(ph.phase)
		active := 0.0
		if ph.end == nil && !r.ended {
			active = 1
		}
		emit(contract.PhaseActive, prometheus.MustNewConstMetric(c.active, prometheus.GaugeValue, active, r.id, p))
		emit(contract.PhaseStart, prometheus.MustNewConstMetric(c.start, prometheus.GaugeValue, e.unix(ph.start.t), r.id, p))
		if ph.end != nil {
			emit(contract.PhaseEnd, prometheus.MustNewConstMetric(c.end, prometheus.GaugeValue, e.unix(ph.end.t), r.id, p))
		}
		for i, g := range e.gpus {
			if !r.measured(i) || r.pending() {
				continue
			}
			emit(contract.PhaseEnergy, prometheus.MustNewConstMetric(c.energyDsc, prometheus.GaugeValue, e.lc.phaseEnergy(r, ph, i), r.id, p, g.idx, e.runUUID(r, i)))
		}
		c.emitHostPhase(r, ph, emit)
	}
}
