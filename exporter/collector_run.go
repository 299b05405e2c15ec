package exporter

import (
	"github.com/joulemark/joulemark/internal/contract"
	"github.com/prometheus/client_golang/prometheus"
)

type runCollector struct {
	e                          *Exporter
	baseline, closed, idleStab *prometheus.Desc
	closedBy                   *prometheus.Desc
}

func newRunCollector(e *Exporter) *runCollector {
	return &runCollector{e: e,
		baseline: prometheus.NewDesc(contract.RunBaselinePower, familyHelp[contract.RunBaselinePower], []string{"run_id", "gpu", "uuid"}, nil),
		closed:   prometheus.NewDesc(contract.RunReleaseClosed, familyHelp[contract.RunReleaseClosed], []string{"run_id"}, nil),
		idleStab: prometheus.NewDesc(contract.RunIdleStable, familyHelp[contract.RunIdleStable], []string{"run_id"}, nil),
		closedBy: prometheus.NewDesc(contract.RunReleaseClosedBy, familyHelp[contract.RunReleaseClosedBy], []string{"run_id", "criterion"}, nil),
	}
}

func (c *runCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.baseline
	ch <- c.closed
	ch <- c.idleStab
	ch <- c.closedBy
}

// Collect serves the runs not frozen yet (see phaseCollector.Collect).
func (c *runCollector) Collect(ch chan<- prometheus.Metric) { c.e.collectLive(ch, c.emitRun) }

// emitRun emits run r's baseline and release metrics. Called with e.mu held.
func (c *runCollector) emitRun(r *run, emit func(family string, m prometheus.Metric)) {
	e := c.e
	if is := e.idleStatus(r); is != nil && !r.pending() {
		for _, b := range is.Baseline {
			emit(contract.RunBaselinePower, prometheus.MustNewConstMetric(c.baseline, prometheus.GaugeValue, b.PowerWatts, r.id, e.gpus[b.GPU].idx, b.UUID))
		}
		emit(contract.RunIdleStable, prometheus.MustNewConstMetric(c.idleStab, prometheus.GaugeValue, b2f(is.Stable), r.id))
	}
	if r.rel.closed != nil {
		emit(contract.RunReleaseClosed, prometheus.MustNewConstMetric(c.closed, prometheus.GaugeValue, b2f(*r.rel.closed), r.id))
	}
	if r.crit.closedBy != "" {
		emit(contract.RunReleaseClosedBy, prometheus.MustNewConstMetric(c.closedBy, prometheus.GaugeValue, e.unix(r.rel.holdStart), r.id, r.crit.closedBy))
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
