package exporter

import "github.com/prometheus/client_golang/prometheus"

// Metric family names of the run collector.
const (
	famRunBaseline = "joulemark_run_baseline_power_watts"
	famRunClosed   = "joulemark_run_release_closed"
	famRunIdle     = "joulemark_run_idle_stable"
	famRunClosedBy = "joulemark_run_release_closed_by_timestamp_seconds"
)

type runCollector struct {
	e                          *Exporter
	baseline, closed, idleStab *prometheus.Desc
	closedBy                   *prometheus.Desc
}

func newRunCollector(e *Exporter) *runCollector {
	return &runCollector{e: e,
		baseline: prometheus.NewDesc(famRunBaseline, familyHelp[famRunBaseline], []string{"run_id", "gpu", "uuid"}, nil),
		closed:   prometheus.NewDesc(famRunClosed, familyHelp[famRunClosed], []string{"run_id"}, nil),
		idleStab: prometheus.NewDesc(famRunIdle, familyHelp[famRunIdle], []string{"run_id"}, nil),
		closedBy: prometheus.NewDesc(famRunClosedBy, familyHelp[famRunClosedBy], []string{"run_id", "criterion"}, nil),
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
	if is := e.idleStatus(r); is != nil {
		for _, b := range is.Baseline {
			emit(famRunBaseline, prometheus.MustNewConstMetric(c.baseline, prometheus.GaugeValue, b.PowerWatts, r.id, e.gpus[b.GPU].idx, b.UUID))
		}
		emit(famRunIdle, prometheus.MustNewConstMetric(c.idleStab, prometheus.GaugeValue, b2f(is.Stable), r.id))
	}
	if r.rel.closed != nil {
		emit(famRunClosed, prometheus.MustNewConstMetric(c.closed, prometheus.GaugeValue, b2f(*r.rel.closed), r.id))
	}
	if r.crit.closedBy != "" {
		emit(famRunClosedBy, prometheus.MustNewConstMetric(c.closedBy, prometheus.GaugeValue, e.unix(r.rel.holdStart), r.id, r.crit.closedBy))
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
