package gpu

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// WriteText writes the report for a person: the versions, each GPU's
// identity, fields, readings and measurements, then every check.
func (r DoctorReport) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	p := func(format string, args ...any) { _, _ = fmt.Fprintf(tw, format, args...) }
	p("joulemark doctor\t%s backend, %s\n", r.Backend, r.Time.Format("2006-01-02 15:04:05 MST"))
	p("driver\t%s\n", r.DriverVersion)
	if r.NVMLVersion != "" {
		p("NVML\t%s (CUDA driver %s)\n", r.NVMLVersion, r.CUDAVersion)
	}
	for _, c := range r.Checks {
		p("[%s]\t%s: %s\n", c.Verdict, c.Name, c.Detail)
	}
	for _, g := range r.GPUs {
		p("\nGPU %d\t%s %s\n", g.Index, g.Name, g.UUID)
		p("  pci bus id\t%s\n", orDash(g.PCIBusID))
		p("  architecture, MIG\t%s, %s\n", orDash(g.Architecture), orDash(g.MIGMode))
		p("  measured as\tpower %s (scope %s), energy %s (scope %s)\n", g.PowerSource, orDash(g.PowerScope), g.EnergySource, orDash(g.EnergyScope))
		for _, f := range g.Fields {
			v := "unsupported: " + f.Error
			if f.Supported && f.Value != nil {
				v = fmt.Sprintf("%.3f", *f.Value)
			}
			p("  field %s\tscope %s\t%s\n", f.Name, orDash(f.Scope), v)
		}
		p("  readings\tinstant %s, average %s, GetPowerUsage %s\n", watts(g.Readings.InstantWatts), watts(g.Readings.AverageWatts), watts(g.Readings.PowerUsageWatts))
		if c := g.Counter; c != nil {
			p("  energy counter\tperiod %s, jitter %s, min %s, max %s (%d updates, polled every %s)\n", ms(c.PeriodSeconds), ms(c.JitterSeconds), ms(c.MinSeconds), ms(c.MaxSeconds), c.Updates, ms(c.ResolutionSeconds))
		}
		l := g.Latency
		p("  read latency\tp50 %s, p99 %s, max %s (%d calls)\n", ms(l.P50Seconds), ms(l.P99Seconds), ms(l.MaxSeconds), l.Calls)
		for _, c := range g.Checks {
			p("  [%s]\t%s: %s\n", c.Verdict, c.Name, c.Detail)
		}
	}
	p("\nverdict\t%s\n", r.Verdict)
	return tw.Flush()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func watts(v *float64) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprintf("%.1f W", *v)
}
