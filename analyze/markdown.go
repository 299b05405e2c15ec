package analyze

import (
	"github.com/joulemark/joulemark/internal/contract"
	"github.com/joulemark/joulemark/internal/stats"
	"github.com/joulemark/joulemark/report"

	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/joulemark/joulemark/internal/phaseapi"
)

// num formats an optional figure; "—" when it could not be computed.
func num(p *float64, format string) string {
	if p == nil {
		return "—"
	}
	return fmt.Sprintf(format, *p)
}

func scaled(p *float64, k float64, format string) string {
	if p == nil {
		return "—"
	}
	return fmt.Sprintf(format, *p*k)
}

func utc(ts float64) string {
	if ts == 0 {
		return "—"
	}
	return time.UnixMilli(int64(ts * 1000)).UTC().Format("2006-01-02 15:04:05.000Z")
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// pctCell renders one percentile: "failed" when it lands on a failed request.
func pctCell(p *float64, k float64, format string, haveData bool, failed int) string {
	if p == nil && haveData && failed > 0 {
		return "failed"
	}
	return scaled(p, k, format)
}

// WriteMarkdown renders report.md: GitHub-flavoured Markdown that also reads
// well as plain text in a terminal.
func WriteMarkdown(w io.Writer, r *report.Report) error {
	head, rest := markdownParts(r)
	_, err := io.WriteString(w, head+rest)
	return err
}

// markdownParts is report.md in two parts: the headline (verdict, flags,
// requests, J/token with intervals), which report.html shows above its
// plots, and the rest.
func markdownParts(r *report.Report) (head, rest string) {
	var b strings.Builder
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }

	headerMarkdown(p, r)
	flagsMarkdown(p, r)
	p("## Formal requests\n\n")
	p("| started | succeeded | failed | error rate |\n|---:|---:|---:|---:|\n")
	p("| %d | %d | %d | %.2f%% |\n\n", r.Requests.Started, r.Requests.Succeeded, r.Requests.Failed, 100*r.Requests.ErrorRate)
	energyPerTokenMarkdown(p, r)
	head = b.String()
	b.Reset()
	stageEnergyMarkdown(p, r)
	releaseMarkdown(p, r)
	gpuEnergyMarkdown(p, r)
	qualityMarkdown(p, r)
	hostMarkdown(p, r)
	gpuMemoryMarkdown(p, r)
	latencyMarkdown(p, r)
	serverMarkdown(p, r)
	p("## Goodput\n\n")
	p("| TTFT SLO | TPOT SLO | good requests | goodput (of all started) |\n|---:|---:|---:|---:|\n")
	p("| %s | %s | %d | %s |\n\n", scaled(r.Goodput.TTFTSLOSeconds, 1000, "%.0f ms"), scaled(r.Goodput.TPOTSLOSeconds, 1000, "%.1f ms"), r.Goodput.GoodRequests, scaled(r.Goodput.Ratio, 100, "%.2f%%"))

	intervalsMarkdown(p, r)
	prefillDecodeMarkdown(p, r)
	costMarkdown(p, r)
	le := r.LifecycleEstimate
	p("## Lifecycle estimate\n\n")
	p("E(N) = E_start + N·e_ss + E_release: fixed overhead E_start + E_release = %s; e_ss = %s per request; at N = %d the fixed overhead per request is %s.\n\n",
		num(le.FixedOverheadJoules, "%.1f J"), num(le.PerRequestJoules, "%.3f J"), le.Requests, num(le.FixedOverheadPerRequestJoules, "%.3f J"))
	measurementMarkdown(p, r)
	if r.GeneratedBy != "" {
		p("_%s_\n", r.GeneratedBy)
	}
	return head, b.String()
}

// headerMarkdown renders the title, the verdict and the run's identity.
func headerMarkdown(p func(string, ...any), r *report.Report) {
	p("# joulemark report — run `%s`\n\n", r.RunID)
	verdict := "**VALID**"
	if !r.Valid {
		verdict = "**NOT VALID** (excluded from formal results and comparisons" + excludedBy(r) + ")"
	}
	boundary := r.Measurement.Boundary
	if r.HostEnergy != nil && r.HostEnergy.Available {
		boundary += " (host CPU packages + DRAM reported beside it, never added in)"
	}
	p("%s · measurement boundary: %s · energy source: %s\n\n", verdict, boundary, orDash(r.Measurement.EnergySource))
	if r.Scenario != "" {
		p("Scenario: `%s`\n\n", r.Scenario)
	}
	p("%s\n\n%s\n\n", identityLine(r.Run), modeLine(r))
}

// excludedBy names the run's excluding flags: ": by `a`, `b`", "" when none.
func excludedBy(r *report.Report) string {
	var codes []string
	for _, f := range r.Flags {
		if f.Excluding && !slices.Contains(codes, "`"+f.Code+"`") {
			codes = append(codes, "`"+f.Code+"`")
		}
	}
	if len(codes) == 0 {
		return ""
	}
	return ": by " + strings.Join(codes, ", ")
}

// flagsMarkdown renders the run's flags, the excluding ones first.
func flagsMarkdown(p func(string, ...any), r *report.Report) {
	p("## Flags\n\n")
	if len(r.Flags) == 0 {
		p("None.\n\n")
		return
	}
	p("| flag | excludes the run | detail |\n|---|---|---|\n")
	for _, excluding := range []bool{true, false} {
		for _, f := range r.Flags {
			if f.Excluding == excluding {
				p("| `%s` | %s | %s |\n", f.Code, yesNo(f.Excluding), mdEscape(f.Message))
			}
		}
	}
	p("\n")
}

// energyPerTokenMarkdown renders the J/token figures, each with its 95%
// confidence interval where the report has one, and the steady state.
func energyPerTokenMarkdown(p func(string, ...any), r *report.Report) {
	p("## Energy per token\n\n| figure | value | 95%% CI |\n|---|---:|---:|\n")
	ci := func(key, format string) string {
		lo, hi, ok := r.CI95(key)
		if !ok {
			return "—"
		}
		return "[" + fmt.Sprintf(format, lo) + ", " + fmt.Sprintf(format, hi) + "]"
	}
	ss := r.SteadyState
	ssVal, ssCI := "not reached", "—"
	if ss.Reached {
		ssVal = num(ss.JoulesPerToken, "%.4f J/token") + " (" + num(whPer1k(ss.JoulesPerToken), "%.4f Wh/1k tokens") + ")"
		ssCI = ci(report.KeySteadyJPT, "%.4f")
	}
	p("| steady-state J/token | %s | %s |\n", ssVal, ssCI)
	if r.Mode == contract.ModeAttached {
		p("| full-lifecycle J/token | not measured (attached run) | — |\n")
	} else {
		p("| full-lifecycle J/token | %s (%s) | %s |\n", num(r.FullLifecycleJoulesPerToken, "%.4f J/token"), num(whPer1k(r.FullLifecycleJoulesPerToken), "%.4f Wh/1k tokens"), ci(report.KeyLifecycleJPT, "%.4f"))
	}
	p("| J per good token (formal energy / good requests' tokens) | %s (%s) | %s |\n", num(r.Goodput.JoulesPerGoodToken, "%.4f J/token"), num(whPer1k(r.Goodput.JoulesPerGoodToken), "%.4f Wh/1k tokens"), ci(report.KeyJoulesPerGood, "%.4f"))
	p("| formal output tokens (successful) | %d | |\n", r.Tokens.FormalOutput)
	p("| formal input tokens (successful) | %d | |\n", r.Tokens.FormalInput)
	p("| throughput | %s | %s |\n", num(r.ThroughputTokensPerSecond, "%.1f tokens/s"), ci(report.KeyThroughput, "%.1f"))
	if r.OutputSanity != nil {
		ie := ""
		if r.OutputSanity.IgnoreEOS != nil {
			ie = ", ignore_eos " + map[bool]string{true: "on", false: "off"}[*r.OutputSanity.IgnoreEOS]
		}
		p("| output sanity: empty / repeated / short of successful formal outputs%s | %s | |\n", ie, sanityCell(r.OutputSanity))
	}
	p("| average GPU power, formal (all GPUs) | %s | |\n", num(r.AvgGPUPowerWatts, "%.1f W"))
	p("| unattributed formal energy (no request active) | %s | |\n\n", num(r.UnattributedJoules, "%.1f J"))
	if ss.Reached {
		p("Steady state: requests %d–%d of the successful formal requests in completion order (%s), %s, %s, window %d × %d, CV < %g.\n\n",
			*ss.FirstRequest, *ss.LastRequest, intp(ss.Requests), num(ss.EnergyJoules, "%.1f J"), int64p(ss.OutputTokens, "output tokens"), ss.Window, ss.Windows, ss.CVThreshold)
	} else {
		p("Steady state not reached: %s (window %d × %d, CV < %g).\n\n", mdEscape(ss.Reason), ss.Window, ss.Windows, ss.CVThreshold)
	}
}

// stageEnergyMarkdown renders each stage's energy and the totals.
func stageEnergyMarkdown(p func(string, ...any), r *report.Report) {
	p("## Stage energy\n\n")
	// energy is the exporter's phase energy when there is one, else the
	// counter's: the column beside it is the counter's, the cross-check
	// the difference is taken from (never the exporter's figure twice).
	p("Energy: the exporter's phase energy where it has one, else the energy counter at the boundaries; counter energy is the cross-check, difference the two sources' relative difference.\n\n")
	p("| stage | start (UTC) | duration | energy | counter energy | difference | avg power |\n|---|---|---:|---:|---:|---:|---:|\n")
	for _, ph := range contract.Phases {
		name := string(ph)
		st, ok := r.Stages[name]
		if !ok {
			p("| %s | — | — | — | — | — | — |\n", name)
			continue
		}
		p("| %s | %s | %.1f s | %s | %s | %s | %s |\n", name, utc(st.Start), st.DurationSeconds,
			num(st.EnergyJoules, "%.1f J"), num(st.CounterEnergyJoules, "%.1f J"), scaled(st.EnergyDisagreementRatio, 100, "%.2f%%"), num(st.AvgPowerWatts, "%.1f W"))
	}
	p("\n| total | energy |\n|---|---:|\n")
	p("| startup (startup + warm-up) | %s |\n", num(r.Energy.StartupJoules, "%.1f J"))
	p("| formal | %s |\n", num(r.Energy.FormalJoules, "%.1f J"))
	p("| release | %s |\n", num(r.Energy.ReleaseJoules, "%.1f J"))
	p("| lifecycle (startup + formal + release) | %s |\n\n", num(r.Energy.LifecycleJoules, "%.1f J"))
}

// releaseMarkdown renders how the release stage closed.
func releaseMarkdown(p func(string, ...any), r *report.Report) {
	closed := yesNo(r.Release.Closed)
	if r.Release.ClosedBy != "" && r.Release.ClosedByAt != nil {
		closed += fmt.Sprintf(" (the %s criterion was met last, at %s)", r.Release.ClosedBy, time.Unix(0, int64(*r.Release.ClosedByAt*1e9)).UTC().Format("15:04:05.000 MST"))
	}
	switch r.Release.ProcessBasis {
	case phaseapi.BasisEngineExit:
		closed += "; the engine's exit reported by the bench"
	case phaseapi.BasisNVML:
		closed += "; the engine's exit judged from NVML's process list (no lifecycle control)"
	case phaseapi.BasisUnverified:
		closed += "; the engine's exit unverified (processes not readable, no exit report)"
	}
	if r.Mode == contract.ModeAttached {
		closed = "not measured (attached run: the engine keeps running)"
	}
	p("Release closed: %s. The idle baseline is never subtracted.\n\n", closed)
}

// latencyMarkdown renders the formal requests' latency percentiles.
func latencyMarkdown(p func(string, ...any), r *report.Report) {
	p("## Latency (formal requests)\n\n")
	p("Error rate first: %.2f%% (%d of %d failed). Failed requests count as infinitely slow in every percentile; a percentile that lands on one reads `failed`.\n\n",
		100*r.Requests.ErrorRate, r.Requests.Failed, r.Requests.Started)
	p("| | p50 | p90 | p95 | p99 |\n|---|---:|---:|---:|---:|\n")
	lat := []struct {
		name   string
		pc     stats.Percentiles
		k      float64
		format string
	}{{"TTFT (ms)", r.Latency.TTFTSeconds, 1000, "%.1f"}, {"TPOT (ms)", r.Latency.TPOTSeconds, 1000, "%.2f"}, {"latency (ms)", r.Latency.LatencySeconds, 1000, "%.0f"}}
	for _, l := range lat {
		have := r.Requests.Started > 0
		f := r.Latency.FailedRequests
		p("| %s | %s | %s | %s | %s |\n", l.name, pctCell(l.pc.P50, l.k, l.format, have, f), pctCell(l.pc.P90, l.k, l.format, have, f),
			pctCell(l.pc.P95, l.k, l.format, have, f), pctCell(l.pc.P99, l.k, l.format, have, f))
	}
	p("\n")
}

// measurementMarkdown renders the measurement boundary, coverage and gaps.
func measurementMarkdown(p func(string, ...any), r *report.Report) {
	m := r.Measurement
	p("## Measurement\n\n")
	p("| boundary | energy source | GPUs | sample interval | coverage |\n|---|---|---:|---:|---:|\n")
	p("| %s | %s | %d | %s | %s |\n\n", m.Boundary, orDash(m.EnergySource), m.GPUs, num(m.SampleIntervalSeconds, "%.3f s"), scaled(m.CoverageRatio, 100, "%.2f%%"))
	if l := fromArchiveLine(m); l != "" {
		p("%s\n\n", l)
	}
	if m.WaitedSeconds != nil {
		p("Analyze waited %.1f s for the run's final samples in Prometheus.\n\n", *m.WaitedSeconds)
	}
	if len(m.Gaps) > 0 {
		p("Gaps (no sample for longer than twice the median interval):\n\n| GPU | series | from (UTC) | length |\n|---|---|---|---:|\n")
		for i, g := range m.Gaps {
			if i == 20 {
				p("| … %d more | | | |\n", len(m.Gaps)-20)
				break
			}
			p("| %s | %s | %s | %.1f s |\n", g.GPU, g.Series, utc(g.Start), g.End-g.Start)
		}
		p("\n")
	}
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

func intp(p *int) string {
	if p == nil {
		return "—"
	}
	return fmt.Sprintf("%d requests", *p)
}

func int64p(p *int64, unit string) string {
	if p == nil {
		return "—"
	}
	return fmt.Sprintf("%d %s", *p, unit)
}

func mdEscape(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

// WriteSummary prints the headline figures as an aligned table (stdout of
// joulemark analyze).
func WriteSummary(w io.Writer, r *report.Report) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(k, v string) { fmt.Fprintf(tw, "%s\t%s\n", k, v) }
	row("run", r.RunID)
	row("valid", yesNo(r.Valid))
	row("mode", r.Mode)
	if r.Run != nil {
		row("tested", fmt.Sprintf("%s, engine %s, on %s, %s, tokens in/out %.0f/%.0f", orDash(r.Run.Model), r.Run.EngineLabel(), r.Run.Hardware(),
			orDash(r.Run.Load()), r.Run.MeanInputTokens, r.Run.MeanOutputTokens))
	}
	for _, f := range r.Flags {
		ex := "warning"
		if f.Excluding {
			ex = "excludes"
		}
		row("flag "+f.Code, ex+": "+f.Message)
	}
	row("error rate", fmt.Sprintf("%.2f%% (%d/%d failed)", 100*r.Requests.ErrorRate, r.Requests.Failed, r.Requests.Started))
	ssv := "not reached: " + r.SteadyState.Reason
	if r.SteadyState.Reached {
		ssv = num(r.SteadyState.JoulesPerToken, "%.4f") + ciText(r, report.KeySteadyJPT, 1, "%.4f")
	}
	row("steady-state J/token", ssv)
	if r.SteadyState.Reached {
		row("sustained-load J/token (no drain)", num(r.SteadyState.SustainedLoadJoulesPerToken, "%.4f")+ciText(r, report.KeySustainedJPT, 1, "%.4f"))
	}
	if r.Mode == contract.ModeAttached {
		row("full-lifecycle J/token", "not measured (attached run)")
	} else {
		row("full-lifecycle J/token", num(r.FullLifecycleJoulesPerToken, "%.4f")+ciText(r, report.KeyLifecycleJPT, 1, "%.4f"))
	}
	row("energy startup/formal/release J", fmt.Sprintf("%s / %s / %s", num(r.Energy.StartupJoules, "%.1f"), num(r.Energy.FormalJoules, "%.1f"), num(r.Energy.ReleaseJoules, "%.1f")))
	row("throughput tokens/s", num(r.ThroughputTokensPerSecond, "%.1f")+ciText(r, report.KeyThroughput, 1, "%.1f"))
	if r.OutputSanity != nil {
		row("outputs empty/repeated/short", sanityCell(r.OutputSanity))
	}
	row("TTFT p50/p99 ms", scaled(r.Latency.TTFTSeconds.P50, 1000, "%.1f")+ciText(r, "latency.ttft_seconds.p50", 1000, "%.1f")+" / "+scaled(r.Latency.TTFTSeconds.P99, 1000, "%.1f")+ciText(r, "latency.ttft_seconds.p99", 1000, "%.1f"))
	row("TPOT p50/p99 ms", scaled(r.Latency.TPOTSeconds.P50, 1000, "%.2f")+ciText(r, "latency.tpot_seconds.p50", 1000, "%.2f")+" / "+scaled(r.Latency.TPOTSeconds.P99, 1000, "%.2f")+ciText(r, "latency.tpot_seconds.p99", 1000, "%.2f"))
	row("goodput", scaled(r.Goodput.Ratio, 100, "%.2f%%")+ciText(r, report.KeyGoodputRatio, 100, "%.2f%%"))
	if len(r.Intervals.CI95) > 0 {
		row("intervals", fmt.Sprintf("[95%% CI], batch means over time (%d of %d figures; the rest say why in Uncertainty)", len(r.Intervals.CI95), len(r.Intervals.Figures)))
	}
	if pd := r.PrefillDecode; pd != nil {
		row("J per prefill/decode token, static W", prefillDecodeSummary(pd))
	}
	row("coverage", scaled(r.Measurement.CoverageRatio, 100, "%.2f%%"))
	row("boundary", r.Measurement.Boundary)
	if c := r.Cost; c != nil {
		row("cost per 1M output tokens (lifecycle)", num(c.Per1MOutputTokensLifecycle.Money, "%.4g "+c.Currency)+" / "+num(c.Per1MOutputTokensLifecycle.GramsCO2e, "%.4g gCO2e")+" within "+c.Boundary)
	}
	return tw.Flush()
}

// fromArchiveLine is the report's sentence on what came from the archive.
func fromArchiveLine(m report.Measurement) string {
	if len(m.FromArchive) == 0 {
		return ""
	}
	s := slices.Clone(m.FromArchive)
	return "Taken from the bench archive (phases.json), Prometheus lacking them: " + strings.Join(s, ", ") + "."
}
