package analyze

import (
	"math"
	"slices"
	"strings"

	"github.com/joulemark/joulemark/internal/contract"
	"github.com/joulemark/joulemark/report"
)

// engineRole is one role of the server view and its names, in order of
// preference.
type engineRole struct {
	role  string
	names []string
}

// engineMetricRoles are the engine's own metrics read for the server view
// (internal/contract owns them; SGLang calls preemptions "retractions" and
// its gauge retracted_now stands in when its counter is missing).
var engineMetricRoles = func() []engineRole {
	var out []engineRole
	for _, r := range contract.ServerRoles {
		out = append(out, engineRole{string(r), contract.EngineNames(r)})
	}
	return out
}()

// ServerTokenTolerance is the client/server output token difference above
// which the run is flagged: engine_shared (excluding) when the engine
// generated more, server_tokens_mismatch (a warning) when fewer.
const ServerTokenTolerance = 0.02

// EngineData is the engine's metrics over the run, by metric name (each
// series' samples).
type EngineData struct {
	Selector string
	Series   map[string][][]Sample
}

// window statistics of gauge series over [from, to]: combine sums the
// series' values (running, waiting: several engine replicas add up) or
// averages them (ratios).
func gaugeStat(series [][]Sample, from, to float64, sum bool) report.Stat {
	var st report.Stat
	if len(series) == 0 || !(to > from) {
		return st
	}
	third := (to - from) / 3
	part := func(a, b float64) (mean, hi float64, ok bool) {
		var means, his []float64
		for _, s := range series {
			n, tot, h := 0, 0.0, math.Inf(-1)
			for _, x := range s {
				if x.T >= a && x.T <= b && !math.IsNaN(x.V) {
					n++
					tot += x.V
					h = max(h, x.V)
				}
			}
			if n > 0 {
				means = append(means, tot/float64(n))
				his = append(his, h)
			}
		}
		if len(means) == 0 {
			return 0, 0, false
		}
		for i := range means {
			mean += means[i]
			if sum {
				hi += his[i]
			} else {
				hi = max(hi, his[i])
			}
		}
		if !sum {
			mean /= float64(len(means))
		}
		return mean, hi, true
	}
	if m, h, ok := part(from, to); ok {
		st.Mean, st.Max = new(m), new(h)
	}
	if m, _, ok := part(from, from+third); ok {
		st.FirstThirdMean = new(m)
	}
	if m, _, ok := part(to-third, to); ok {
		st.LastThirdMean = new(m)
	}
	return st
}

// counterIncrease sums each series' increase over [from, to] (resets
// bridged as Prometheus' increase does); false when a series does not
// cover both ends.
func counterIncrease(series [][]Sample, from, to float64) (float64, bool) {
	if len(series) == 0 {
		return 0, false
	}
	tot := 0.0
	for _, s := range series {
		e, ok := newCurve(s, 2*medianInterval(s)).between(from, to)
		if !ok {
			return 0, false
		}
		tot += e
	}
	return tot, true
}

// counterBounds is the least and the most the series' counters can have
// increased over [from, to] at their sampling resolution: each boundary's
// true value lies between the samples around it (see curve.bracket); hi is
// +Inf when a series has no sample after to or none before from (an engine
// stopped right after the formal phase, before its next scrape).
func counterBounds(series [][]Sample, from, to float64) (lo, hi float64) {
	for _, s := range series {
		cv := newCurve(s, 2*medianInterval(s))
		fromLo, fromHi := cv.bracket(from)
		toLo, toHi := cv.bracket(to)
		lo += max(toLo-fromHi, 0)
		hi += toHi - fromLo
	}
	return lo, hi
}

// server fills the server section and the client/server token check.
func (c *computation) server() {
	sv := &report.Server{MetricsFound: map[string]string{}, ClientOutputTokens: c.r.Tokens.FormalOutput}
	c.r.Server = sv
	ed := c.d.Engine
	fb, ok := c.complete("formal")
	if ed != nil {
		sv.Selector = ed.Selector
	}
	var util [][]Sample
	for _, g := range c.d.GPUs {
		if len(g.Utilization) > 0 {
			util = append(util, g.Utilization)
		}
	}
	if ok {
		sv.GPUUtilization = gaugeStat(util, fb.Start, fb.End, false)
	}
	if ed == nil || len(ed.Series) == 0 {
		sv.Reason = "no vLLM or SGLang metric in Prometheus for the run"
		if ed != nil && ed.Selector != "" {
			sv.Reason += " (selector " + ed.Selector + "; is the engine scraped?)"
		}
		return
	}
	if !ok {
		sv.Reason = "the formal phase has no complete boundaries"
		return
	}
	series := map[string][][]Sample{}
	for _, r := range engineMetricRoles {
		for _, n := range r.names {
			if s := ed.Series[n]; len(s) > 0 {
				series[r.role], sv.MetricsFound[r.role] = s, n
				break
			}
		}
	}
	sv.Available = true
	for _, n := range sv.MetricsFound {
		if e, _, ok := strings.Cut(n, ":"); ok {
			sv.Engine = e
		}
	}
	sv.Running = gaugeStat(series[string(contract.RoleRunning)], fb.Start, fb.End, true)
	sv.Waiting = gaugeStat(series[string(contract.RoleWaiting)], fb.Start, fb.End, true)
	sv.KVCache = gaugeStat(series[string(contract.RoleKVCache)], fb.Start, fb.End, false)
	if v, ok := counterIncrease(series[string(contract.RolePreemptions)], fb.Start, fb.End); ok {
		sv.Preemptions = new(math.Round(v))
	} else if st := gaugeStat(series[string(contract.RoleRetractedNow)], fb.Start, fb.End, true); st.Max != nil {
		sv.Preemptions = new(*st.Max) // a lower bound: the gauge holds the latest batch's retractions
	}
	if v, ok := counterIncrease(series[string(contract.RoleGenerationTokens)], fb.Start, fb.End); ok {
		sv.OutputTokens = new(math.Round(v))
		// The interpolated increase can be off by what the engine
		// generated in the scrape intervals holding the boundaries (all
		// of it when the load starts or stops there), and by anything
		// after its last scrape when the engine stopped before the next.
		lo, hi := counterBounds(series[string(contract.RoleGenerationTokens)], fb.Start, fb.End)
		if !math.IsInf(hi, 1) {
			sv.OutputTokensResolution = new(hi - lo)
		}
		c.tokenCheck(sv, lo, hi)
	}
}

// tokenCheck compares the engine's output tokens over the formal phase
// with the client's. An engine that certainly generated more than the
// client counted, beyond ServerTokenTolerance, served other traffic too: its
// energy is not the bench's alone, so the run is flagged engine_shared
// (excluding). Any other difference beyond the tolerance is the warning
// server_tokens_mismatch. A difference within what the scrape resolution
// explains (hi − lo) is neither; with hi unbounded (the engine stopped
// before its next scrape) only lo, what it certainly generated, counts.
func (c *computation) tokenCheck(sv *report.Server, lo, hi float64) {
	cl := float64(sv.ClientOutputTokens)
	if cl <= 0 {
		return
	}
	diff := (*sv.OutputTokens - cl) / cl
	sv.TokenDifferenceRatio = new(diff)
	bounded := !math.IsInf(hi, 1)
	beyond := bounded && math.Abs(*sv.OutputTokens-cl) > hi-lo || !bounded && (lo-cl)/cl > ServerTokenTolerance
	if math.Abs(diff) <= ServerTokenTolerance || !beyond {
		return
	}
	if diff > 0 {
		c.flag(contract.FlagEngineShared, true, "the engine generated %.0f output tokens over the formal phase (%.0f to %.0f at its scrape resolution), the bench counted %d (%+.1f%%, beyond %.0f%% and the scrape resolution): other clients (or requests the bench did not count) shared the engine and its GPUs' energy, so steady-state and full-lifecycle J/token are not the bench's",
			*sv.OutputTokens, lo, hi, sv.ClientOutputTokens, 100*diff, 100*ServerTokenTolerance)
		return
	}
	c.flag(contract.FlagServerTokensMismatch, false, "the engine generated %.0f output tokens over the formal phase (%.0f to %.0f at its scrape resolution), the client counted %d (%+.1f%%, beyond ±%.0f%% and the scrape resolution): check the engine's usage reporting and token counter",
		*sv.OutputTokens, lo, hi, sv.ClientOutputTokens, 100*diff, 100*ServerTokenTolerance)
}

// statCell renders mean / max.
func statCell(s report.Stat, format string) string {
	return num(s.Mean, format) + " / " + num(s.Max, format)
}

// serverMarkdown is report.md's server view and diagnosis.
func serverMarkdown(p func(string, ...any), r *report.Report) {
	sv := r.Server
	if sv == nil {
		return
	}
	p("## Server view (formal phase)\n\n")
	if !sv.Available {
		p("No engine metrics: %s. GPU utilization mean / max: %s.\n\n", mdEscape(sv.Reason), statCell(pct(sv.GPUUtilization), "%.0f%%"))
	} else {
		roles := slices.Sorted(func(yield func(string) bool) {
			for k := range sv.MetricsFound {
				if !yield(k) {
					return
				}
			}
		})
		var found []string
		for _, k := range roles {
			found = append(found, "`"+sv.MetricsFound[k]+"`")
		}
		p("Engine %s, selector `%s`; metrics found: %s.\n\n", orDash(sv.Engine), orDash(sv.Selector), strings.Join(found, ", "))
		p("| figure | mean / max | first → last third |\n|---|---:|---:|\n")
		for _, row := range []struct {
			name   string
			s      report.Stat
			format string
		}{{"running requests", sv.Running, "%.1f"}, {"waiting requests", sv.Waiting, "%.1f"},
			{"KV cache usage", pct(sv.KVCache), "%.0f%%"}, {"GPU utilization", pct(sv.GPUUtilization), "%.0f%%"}} {
			p("| %s | %s | %s → %s |\n", row.name, statCell(row.s, row.format), num(row.s.FirstThirdMean, row.format), num(row.s.LastThirdMean, row.format))
		}
		p("| preemptions | %s | |\n", num(sv.Preemptions, "%.0f"))
		p("| output tokens, server / client | %s / %d (%s) | |\n\n", num(sv.OutputTokens, "%.0f"), sv.ClientOutputTokens, scaled(sv.TokenDifferenceRatio, 100, "%+.2f%%"))
	}
	diagnosisMarkdown(p, r.Diagnosis)
}

// pct scales a ratio Stat to percent.
func pct(s report.Stat) report.Stat {
	m := func(p *float64) *float64 {
		if p == nil {
			return nil
		}
		return new(*p * 100)
	}
	return report.Stat{Mean: m(s.Mean), Max: m(s.Max), FirstThirdMean: m(s.FirstThirdMean), LastThirdMean: m(s.LastThirdMean)}
}
