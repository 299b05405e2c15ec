package analyze

import (
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/joulemark/joulemark/internal/contract"
	"github.com/joulemark/joulemark/internal/powercap"
	"github.com/joulemark/joulemark/report"
)

// HostData is the run's host energy as the exporters published it.
type HostData struct {
	// PhaseEnergy is the host energy per phase, summed over the zones in
	// the host total (packages and DRAM) of every exporter.
	PhaseEnergy map[string]float64
	// Zones names the zones summed: "instance zone (domain)".
	Zones []string
	// Counters are those zones' energy counters over the run.
	Counters [][]Sample
	// Unavailable holds each exporter's reason when it could read no zone.
	Unavailable map[string]string // instance → reason
}

func inHostTotal(domain string) bool {
	return strings.HasPrefix(domain, "package") || domain == "dram"
}

// hostEnergy fills report.json "host_energy" (after the GPU figures).
func (c *computation) hostEnergy() {
	he := &report.HostEnergy{Boundary: report.HostBoundary, Stages: map[string]*float64{}}
	c.r.HostEnergy = he
	h := c.d.Host
	switch {
	case h == nil:
		he.Reason = report.ReasonHostNotExported
		he.Message = "the run's exporters published no host energy (joulemark exporter --host.powercap-path off, or an exporter without host metering)"
		return
	case len(h.PhaseEnergy) == 0:
		he.Reason = report.ReasonHostNotExported
		var why []string
		for _, inst := range slices.Sorted(maps.Keys(h.Unavailable)) {
			he.Reason = h.Unavailable[inst]
			why = append(why, inst+": "+powercap.Explain(h.Unavailable[inst]))
		}
		he.Message = strings.Join(why, "; ")
		return
	}
	if len(h.Unavailable) > 0 {
		// some exporters measured and others did not: a partial host total
		// would understate; report nothing rather than a wrong sum
		var why []string
		for _, inst := range slices.Sorted(maps.Keys(h.Unavailable)) {
			he.Reason = h.Unavailable[inst]
			why = append(why, inst+": "+powercap.Explain(h.Unavailable[inst]))
		}
		he.Message = "host energy missing on some nodes: " + strings.Join(why, "; ")
		return
	}
	he.Available, he.Zones = true, h.Zones
	for _, ph := range contract.Phases {
		name := string(ph)
		if v, ok := h.PhaseEnergy[name]; ok {
			he.Stages[name] = new(v)
		} else {
			he.Stages[name] = nil
		}
	}
	sum := func(names ...string) *float64 {
		t := 0.0
		for _, n := range names {
			if he.Stages[n] == nil {
				return nil
			}
			t += *he.Stages[n]
		}
		return &t
	}
	he.StartupJoules, he.FormalJoules, he.ReleaseJoules = sum("startup", "warmup"), sum("formal"), sum("release")
	he.LifecycleJoules = sum("startup", "warmup", "formal", "release")
	tokens := float64(c.r.Tokens.FormalOutput)
	if gl := c.r.Energy.LifecycleJoules; gl != nil && he.LifecycleJoules != nil && tokens > 0 {
		he.GPUPlusHostFullLifecycleJoulesPerToken = new((*gl + *he.LifecycleJoules) / tokens)
	}
	ss := c.r.SteadyState
	if !ss.Reached || ss.Start == nil || ss.End == nil || ss.EnergyJoules == nil || ss.OutputTokens == nil || *ss.OutputTokens == 0 {
		return
	}
	tol := 0.0
	if !math.IsNaN(c.interval) {
		tol = 2 * c.interval
	}
	host := 0.0
	for _, s := range h.Counters {
		e, ok := newCurve(s, max(tol, 2*medianInterval(s))).between(*ss.Start, *ss.End)
		if !ok {
			return
		}
		host += e
	}
	if len(h.Counters) == 0 {
		return
	}
	he.SteadyStateJoules = new(host)
	out := float64(*ss.OutputTokens)
	he.GPUPlusHostSteadyStateJoulesPerToken = new((*ss.EnergyJoules + host) / out)
	he.TokensPerJouleGPU = new(out / *ss.EnergyJoules)
	he.TokensPerJouleGPUPlusHost = new(out / (*ss.EnergyJoules + host))
}

// hostMarkdown is report.md's host energy section.
func hostMarkdown(p func(string, ...any), r *report.Report) {
	he := r.HostEnergy
	if he == nil {
		return
	}
	p("## Host energy (beside the GPUs)\n\n")
	if !he.Available {
		p("Host energy: **null** (%s): %s\n\n", he.Reason, mdEscape(he.Message))
		return
	}
	p("Boundary: %s. Zones: %s.\n\n", he.Boundary, strings.Join(he.Zones, ", "))
	p("| stage | host energy | GPU energy |\n|---|---:|---:|\n")
	for _, ph := range contract.Phases {
		name := string(ph)
		var gpu *float64
		if st, ok := r.Stages[name]; ok {
			gpu = st.EnergyJoules
		}
		p("| %s | %s | %s |\n", name, num(he.Stages[name], "%.1f J"), num(gpu, "%.1f J"))
	}
	p("\n| figure | GPU only | GPU + host |\n|---|---:|---:|\n")
	ss := r.SteadyState
	var gpuSS *float64
	if ss.Reached {
		gpuSS = ss.JoulesPerToken
	}
	p("| steady-state J/token | %s | %s |\n", num(gpuSS, "%.4f"), num(he.GPUPlusHostSteadyStateJoulesPerToken, "%.4f"))
	p("| full-lifecycle J/token | %s | %s |\n", num(r.FullLifecycleJoulesPerToken, "%.4f"), num(he.GPUPlusHostFullLifecycleJoulesPerToken, "%.4f"))
	p("| tokens per joule (steady state) | %s | %s |\n\n", num(he.TokensPerJouleGPU, "%.3f"), num(he.TokensPerJouleGPUPlusHost, "%.3f"))
}
