package benchjob

import (
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/joulemark/joulemark/internal/contract"
	"github.com/joulemark/joulemark/internal/runarchive"
	"github.com/joulemark/joulemark/internal/secretfile"
	"github.com/joulemark/joulemark/internal/stats"
)

// summarize computes the summary of records. Latency percentiles follow
// the report's policy (internal/stats): a failed request counts as
// infinitely slow in TTFT, TPOT and latency, so the p99 printed here is the
// report's p99 for the same run.
func summarize(recs []*runarchive.Request) runarchive.Summary {
	var acc summaryAcc
	for _, r := range recs {
		acc.add(r)
	}
	return acc.summary()
}

// summaryAcc gathers a summary one record at a time (summarize), keeping
// of each record only what the summary needs: counts, the first send and
// last end, and its TTFT, TPOT and latency. A run keeps one per phase
// instead of its records: a few bytes per request, none of them pointers
// for the collector to scan.
type summaryAcc struct {
	s               runarchive.Summary
	ttft, tpot, lat []float64
	first, last     float64
}

// add counts record r.
func (a *summaryAcc) add(r *runarchive.Request) {
	if a.s.Errors == nil {
		a.s.Errors, a.s.TokensSource = map[string]int{}, map[string]int{}
	}
	s := &a.s
	if s.Started == 0 || r.SendTime < a.first {
		a.first = r.SendTime
	}
	s.Started++
	if r.EndTime > a.last {
		a.last = r.EndTime
	}
	if !r.Success {
		s.Failed++
		s.Errors[r.ErrorClass]++
		a.ttft, a.tpot, a.lat = append(a.ttft, stats.Failed), append(a.tpot, stats.Failed), append(a.lat, stats.Failed)
		return
	}
	a.lat = append(a.lat, r.LatencySeconds)
	s.Succeeded++
	s.OutputTokens += int64(r.OutputTokens)
	s.InputTokens += int64(r.InputTokens)
	s.TokensSource[r.TokensSource]++
	if r.EmptyOutput() {
		s.EmptyOutputs++
	}
	if r.TTFTSeconds != nil {
		a.ttft = append(a.ttft, *r.TTFTSeconds)
	}
	if r.TPOTSeconds != nil {
		a.tpot = append(a.tpot, *r.TPOTSeconds)
	}
}

// summary is the summary of the records added (it reorders the kept
// values, not the answer).
func (a *summaryAcc) summary() runarchive.Summary {
	s := a.s
	if s.Errors == nil {
		s.Errors, s.TokensSource = map[string]int{}, map[string]int{}
	}
	if s.Started > 0 {
		s.ErrorRate = float64(s.Failed) / float64(s.Started)
	}
	if d := a.last - a.first; d > 0 {
		s.DurationSeconds = d
		s.RequestsPerSecond = float64(s.Started) / d
		s.OutputTokensPerSecond = float64(s.OutputTokens) / d
	}
	s.TTFT, s.TPOT, s.Latency = percentiles(a.ttft), percentiles(a.tpot), percentiles(a.lat)
	return s
}

// percentiles are stats.Of over v (reordered), with their count.
func percentiles(v []float64) runarchive.Percentiles {
	return runarchive.Percentiles{N: len(v), Percentiles: stats.Of(v)}
}

// WriteSummary prints the end-of-run table: flags and error rate first,
// then TTFT/TPOT/latency percentiles and throughput, then the samples.
func WriteSummary(w io.Writer, res *Result) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	s := res.Summary
	fmt.Fprintf(tw, "run\t%s (%s)\n", res.RunID, res.Status)
	fmt.Fprintf(tw, "archive\t%s\n", res.ArchiveDir)
	if len(res.Flags) > 0 {
		fmt.Fprintf(tw, "flags\t%s\n", strings.Join(res.Flags, ", "))
	}
	if s.Started == 0 {
		fmt.Fprintf(tw, "error rate\tn/a (no formal request)\n")
	} else {
		fmt.Fprintf(tw, "error rate\t%.2f%% (%d of %d failed)\n", 100*s.ErrorRate, s.Failed, s.Started)
	}
	if len(s.Errors) > 0 {
		for _, c := range slices.Sorted(maps.Keys(s.Errors)) {
			fmt.Fprintf(tw, "  %s\t%d\n", c, s.Errors[c])
		}
	}
	fmt.Fprintf(tw, "\tp50\tp90\tp95\tp99\tn\n")
	for _, row := range []struct {
		name string
		p    runarchive.Percentiles
	}{{"TTFT ms", s.TTFT}, {"TPOT ms", s.TPOT}, {"latency ms", s.Latency}} {
		if row.p.N == 0 {
			fmt.Fprintf(tw, "%s\tn/a\tn/a\tn/a\tn/a\t0\n", row.name)
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\n", row.name, ms(row.p.P50), ms(row.p.P90), ms(row.p.P95), ms(row.p.P99), row.p.N)
	}
	if s.DurationSeconds > 0 && s.Succeeded > 0 {
		fmt.Fprintf(tw, "throughput\t%.2f req/s, %.1f output tok/s over %.1f s\n", s.RequestsPerSecond, s.OutputTokensPerSecond, s.DurationSeconds)
	} else {
		fmt.Fprintf(tw, "throughput\tn/a (no successful formal request)\n")
	}
	if res.TargetRate > 0 {
		fmt.Fprintf(tw, "rate\ttarget %.2f req/s, achieved %.2f req/s\n", res.TargetRate, res.AchievedRate)
	}
	fmt.Fprintf(tw, "tokens\t%d output, %d input (%s)\n", s.OutputTokens, s.InputTokens, formatCounts(s.TokensSource))
	if res.RemoteWriteURL != "" {
		st := res.RemoteWrite
		fmt.Fprintf(tw, "samples\t%d written, %d acknowledged, %d lost\n", st.Enqueued+st.Dropped, st.Acknowledged, st.Lost())
	} else {
		fmt.Fprintf(tw, "samples\tremote write off (no --remote-write.url)\n")
	}
	if e := phaseEnergyLine(res); e != "" {
		fmt.Fprintf(tw, "energy\t%s\n", e)
	}
	if why := res.Unusable(); res.Status == runarchive.StatusCompleted && len(why) > 0 {
		fmt.Fprintf(tw, "unusable\t%s\n", strings.Join(why, "; "))
	}
	if res.Status == runarchive.StatusCompleted && res.RemoteWriteURL != "" {
		fmt.Fprintf(tw, "next\t%s\n", analyzeCommand(res))
	}
	return tw.Flush()
}

// ms formats a percentile in milliseconds; one that lands on a failed
// request is "failed".
func ms(v *float64) string {
	if v == nil {
		return "failed"
	}
	return fmt.Sprintf("%.1f", 1000**v)
}

// phaseEnergyLine is each phase's energy as the exporters reported it at
// the run's end, summed over them: "idle 1400.2 J · … · formal 1278.9 J"
// ("" without any).
func phaseEnergyLine(res *Result) string {
	sum := map[contract.Phase]float64{}
	var order []contract.Phase
	for _, u := range slices.Sorted(maps.Keys(res.Release)) {
		st := res.Release[u]
		if st == nil {
			continue
		}
		for _, ph := range st.Phases {
			if _, seen := sum[ph.Phase]; !seen {
				order = append(order, ph.Phase)
			}
			sum[ph.Phase] += ph.EnergyJoules
		}
	}
	var parts []string
	for _, ph := range order {
		parts = append(parts, fmt.Sprintf("%s %.1f J", ph, sum[ph]))
	}
	if len(parts) == 0 {
		return ""
	}
	return strings.Join(parts, " · ") + " (GPU board energy, the exporters' figures)"
}

// analyzeCommand is the command that analyzes the run.
func analyzeCommand(res *Result) string {
	cmd := "joulemark analyze --run-id " + res.RunID + " --runs-dir " + filepath.Dir(res.ArchiveDir)
	if res.PrometheusURL != "" {
		cmd += " --prometheus.url " + secretfile.RedactURL(res.PrometheusURL)
	}
	return cmd
}

func formatCounts(m map[string]int) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s: %d", k, m[k]))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}
