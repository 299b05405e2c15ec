package exporter

import "github.com/prometheus/client_golang/prometheus"

type runCollector struct {
	e                          *Exporter
	baseline, closed, idleStab *prometheus.Desc
}

func newRunCollector(e *Exporter) *runCollector {
	return &runCollector{e: e,
		baseline: prometheus.NewDesc("joulemark_run_baseline_power_watts", "Mean power of the run's idle phase.", []string{"run_id", "gpu", "uuid"}, nil),
		closed: prometheus.NewDesc("joulemark_run_release_closed",
			"1 when every GPU came back within the tolerance of its idle baseline and held; 0 when the wait timed out (or the run was ended first).", []string{"run_id"}, nil),
		idleStab: prometheus.NewDesc("joulemark_run_idle_stable",
			"1 when the idle phase was stable (power CV under the threshold, no compute process where the GPU can tell), else 0.", []string{"run_id"}, nil),
	}
}

func (c *runCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.baseline
	ch <- c.closed
	ch <- c.idleStab
}

func (c *runCollector) Collect(ch chan<- prometheus.Metric) {
	e := c.e
	e.mu.RLock()
	defer e.mu.RUnlock()
	for _, r := range e.runs {
		if is := e.idleStatus(r); is != nil {
			for _, b := range is.Baseline {
				ch <- prometheus.MustNewConstMetric(c.baseline, prometheus.GaugeValue, b.PowerWatts, r.id, e.gpus[b.GPU].idx, b.UUID)
			}
			ch <- prometheus.MustNewConstMetric(c.idleStab, prometheus.GaugeValue, b2f(is.Stable), r.id)
		}
		if r.rel.closed != nil {
			ch <- prometheus.MustNewConstMetric(c.closed, prometheus.GaugeValue, b2f(*r.rel.closed), r.id)
		}
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
