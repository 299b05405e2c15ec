package exporter

import (
	"math"

	"github.com/joulemark/joulemark/internal/contract"
	"github.com/prometheus/client_golang/prometheus"
)

// clockEventReasons are NVML's clocks-event-reason bits and their label values.
var clockEventReasons = []struct {
	bit  uint64
	name string
}{
	{0x1, "gpu_idle"},
	{0x2, "applications_clocks_setting"},
	{0x4, "sw_power_cap"},
	{0x8, "hw_slowdown"},
	{0x10, "sync_boost"},
	{0x20, "sw_thermal_slowdown"},
	{0x40, "hw_thermal_slowdown"},
	{0x80, "hw_power_brake_slowdown"},
	{0x100, "display_clock_setting"},
}

// contextCollector serves the slow (1 Hz) context gauges and GPU health.
type contextCollector struct {
	e                                        *Exporter
	memory, util, temp, limit, clock, events *prometheus.Desc
	avgPower                                 *prometheus.Desc
	up                                       *prometheus.Desc
}

func newContextCollector(e *Exporter) *contextCollector {
	d := func(name, help string) *prometheus.Desc { return prometheus.NewDesc(name, help, gpuLabels, nil) }
	return &contextCollector{e: e,
		memory: d(contract.GPUMemoryUsed, "GPU memory in use."),
		util:   d(contract.GPUUtilization, "Fraction of the last sample period the GPU was busy (NVML utilization.gpu / 100)."),
		temp:   d(contract.GPUTemperature, "GPU core temperature."),
		limit:  d(contract.GPUPowerLimit, "Enforced power limit."),
		clock:  d(contract.GPUSMClock, "Current SM clock."),
		avgPower: d(contract.GPUPowerAverage,
			"NVML's own ~1 s average power (field 185), read at 1 Hz; joulemark_gpu_power_watts is the sampled power."),
		events: prometheus.NewDesc(contract.GPUClockEventActive,
			"1 while the clock-event (throttle) reason is active, by NVML reason.", []string{"gpu", "uuid", "reason"}, nil),
		up: d(contract.GPUUp, "1 when the GPU's last sample succeeded and its reads are not hung, 0 when it failed (lost, erroring or never opened GPU) or a read has not returned for 5 intervals."),
	}
}

func (c *contextCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.memory, c.util, c.temp, c.limit, c.clock, c.events, c.up, c.avgPower} {
		ch <- d
	}
}

// Collect is called by the gatherer with e.mu held (read): one snapshot.
func (c *contextCollector) Collect(ch chan<- prometheus.Metric) {
	now := c.e.off(c.e.clock.Now())
	for _, g := range c.e.gpus {
		up := 0.0
		if g.healthy && g.has && (!c.e.sampling || !c.e.stalled(g, now)) {
			up = 1
		}
		ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, up, g.idx, g.dev.UUID)
		if !g.hasSlow {
			continue
		}
		s := g.slow
		for _, m := range []struct {
			d *prometheus.Desc
			v float64
		}{{c.memory, s.MemoryUsedBytes}, {c.util, s.UtilizationRatio}, {c.temp, s.TemperatureCelsius}, {c.limit, s.PowerLimitWatts}, {c.clock, s.SMClockHertz}, {c.avgPower, s.AvgPowerWatts}} {
			if !math.IsNaN(m.v) {
				ch <- prometheus.MustNewConstMetric(m.d, prometheus.GaugeValue, m.v, g.idx, g.dev.UUID)
			}
		}
		if s.HasClockEvents {
			for _, r := range clockEventReasons {
				v := 0.0
				if s.ClockEventReasons&r.bit != 0 {
					v = 1
				}
				ch <- prometheus.MustNewConstMetric(c.events, prometheus.GaugeValue, v, g.idx, g.dev.UUID, r.name)
			}
		}
	}
}
