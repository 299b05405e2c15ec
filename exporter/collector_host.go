package exporter

import (
	"math"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/joulemark/joulemark/internal/contract"
	"github.com/joulemark/joulemark/internal/powercap"
)

// Host energy: the CPU packages' and DRAM's RAPL counters (powercap), read at
// the fast sampling rate beside the GPUs, so a report can put host energy
// next to GPU energy. A host without readable RAPL exports the reason, never
// a 0.

var hostLabels = []string{"zone", "domain"}

type hostCollector struct {
	m                         *powercap.Meter
	energy, up, unavail, wrap *prometheus.Desc
}

func newHostCollector(m *powercap.Meter) *hostCollector {
	return &hostCollector{m: m,
		energy: prometheus.NewDesc(contract.HostEnergy,
			"Host energy of one RAPL powercap zone counted by the exporter (continued across restarts from --storage.path; counter wraparound at max_energy_range_uj bridged). Absent while the zone is unreadable.", hostLabels, nil),
		up: prometheus.NewDesc(contract.HostEnergyUp,
			"1 when the RAPL zone's energy counter was read at the last sample, else 0.", hostLabels, nil),
		unavail: prometheus.NewDesc(contract.HostEnergyUnavail,
			"1 when no RAPL zone is readable, with the reason (no_rapl, permission_denied, read_error); absent when host energy is measured.", []string{"reason"}, nil),
		wrap: prometheus.NewDesc(contract.HostEnergyWraps,
			"Times the zone's energy counter wrapped at max_energy_range_uj and was bridged.", hostLabels, nil),
	}
}

func (c *hostCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.energy
	ch <- c.up
	ch <- c.unavail
	ch <- c.wrap
}

func (c *hostCollector) Collect(ch chan<- prometheus.Metric) {
	if ok, reason, _ := c.m.Status(); !ok {
		ch <- prometheus.MustNewConstMetric(c.unavail, prometheus.GaugeValue, 1, reason)
	}
	for _, r := range c.m.Readings() {
		up := 0.0
		if r.OK() {
			up = 1
			ch <- prometheus.MustNewConstMetric(c.energy, prometheus.CounterValue, r.Joules, r.ID, r.Domain)
			ch <- prometheus.MustNewConstMetric(c.wrap, prometheus.CounterValue, float64(r.Wraps), r.ID, r.Domain)
		}
		ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, up, r.ID, r.Domain)
	}
}

// hostNow reads the host's zones at a phase boundary: each zone's cumulative
// joules, NaN where unreadable. Nil without host metering.
func (e *Exporter) hostNow() []float64 {
	if e.cfg.Host == nil {
		return nil
	}
	e.cfg.Host.Sample()
	return e.hostLatest()
}

// emitHostPhase emits the host energy of phase ph per zone readable at both
// its boundaries (up to now while it runs). Called with e.mu held.
func (c *phaseCollector) emitHostPhase(r *run, ph *phaseRec, emit func(string, prometheus.Metric)) {
	host := c.e.cfg.Host
	if host == nil || ph.start.host == nil {
		return
	}
	var end []float64
	if ph.end != nil {
		end = ph.end.host
	} else {
		end = c.e.hostLatest()
	}
	for i, z := range host.Zones() {
		if i >= len(end) || i >= len(ph.start.host) || math.IsNaN(ph.start.host[i]) || math.IsNaN(end[i]) {
			continue
		}
		emit(contract.PhaseHostEnergy, prometheus.MustNewConstMetric(c.hostEnergy, prometheus.GaugeValue,
			math.Max(0, end[i]-ph.start.host[i]), r.id, string(ph.phase), z.ID, z.Domain))
	}
}

// hostLatest is each zone's joules at the last sample, NaN where unreadable.
func (e *Exporter) hostLatest() []float64 {
	rs := e.cfg.Host.Readings()
	out := make([]float64, len(rs))
	for i, r := range rs {
		out[i] = math.NaN()
		if r.OK() {
			out[i] = r.Joules
		}
	}
	return out
}
