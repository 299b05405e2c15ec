package compare

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/joulemark/joulemark/internal/reportcsv"
	"github.com/joulemark/joulemark/report/outputsanity"
	"github.com/joulemark/joulemark/runset"
)

// runRows is the side-by-side table, header first: each run with its load.
func runRows(res Result) [][]string {
	rows := [][]string{{"run", "load", "group", "status", "formal_out_tokens", "tok/s", "outputs empty/rep/short",
		"ss_J/tok", "life_J/tok", "life/ss", "ttft_p95_ms", "tpot_p95_ms", "goodput", "err_rate"}}
	for _, row := range res.Runs {
		r := row.Run
		status := "included"
		if !row.Included {
			status = "excluded: " + row.Excluded
		}
		ratio := "-"
		ss, okSS := runset.SteadyStateJPT.Value(&r.Report)
		life, okLife := runset.LifecycleJPT.Value(&r.Report)
		if okSS && okLife && ss != 0 {
			ratio = runset.FormatValue(life/ss, true)
		}
		rows = append(rows, []string{r.Name, runset.RunLoad(r), row.Group, status, fmt.Sprint(r.Report.Tokens.FormalOutput),
			runset.FormatMetric(runset.Throughput, r), outputsanity.Format(r.Sanity),
			runset.FormatValue(ss, okSS), runset.FormatValue(life, okLife), ratio,
			runset.FormatMetric(runset.TTFTP95, r), runset.FormatMetric(runset.TPOTP95, r),
			runset.FormatMetric(runset.Goodput, r), runset.FormatMetric(runset.ErrorRate, r)})
	}
	return rows
}

// groupRows is the table of group medians, header first.
func groupRows(res Result) [][]string {
	rows := [][]string{{"group", "runs", "included", "median_ss_J/tok", "median_life_J/tok", "life/ss", "rank_ss", "rank_life", "comparability"}}
	for _, g := range res.Groups {
		rows = append(rows, []string{g.Key, fmt.Sprint(len(g.Runs)), fmt.Sprint(g.Included),
			fmtp(g.MedianSS), fmtp(g.MedianLife), fmtp(g.Ratio), fmtp(g.RankSS), fmtp(g.RankLife), spreadText(g.Spread)})
	}
	return rows
}

// repetitionRows is the table of repetition groups, header first: each
// figure the median over the valid repetitions with their range.
func repetitionRows(res Result) [][]string {
	metrics := []runset.Metric{runset.SteadyStateJPT, runset.LifecycleJPT, runset.Throughput, runset.TTFTP95, runset.TPOTP95}
	head := []string{"repetition group", "valid/found"}
	for _, m := range metrics {
		head = append(head, m.Header())
	}
	rows := [][]string{append(head, "ss rel. range", "agreement")}
	for _, g := range res.Repetitions {
		a := g.Agreement
		found := fmt.Sprintf("%d/%d", a.Valid, a.Found)
		if a.Planned > a.Found {
			found += fmt.Sprintf(" of %d", a.Planned)
		}
		row := []string{g.Group, found}
		for _, m := range metrics {
			row = append(row, pooledText(m, g.Metrics[m.Key]))
		}
		rr := "-"
		if a.RelativeRange != nil {
			rr = runset.FormatValue(100**a.RelativeRange, true) + "%"
		}
		verdict := a.Verdict
		if h := a.HeterogeneityP; h != nil && *h < runset.Alpha {
			verdict += fmt.Sprintf("; steady-state J/token differs beyond the runs' own intervals (p=%.3f): run-to-run spread", *h)
		}
		if len(a.Invalid) > 0 {
			verdict += "; not pooled: " + strings.Join(a.Invalid, ", ")
		}
		rows = append(rows, append(row, rr, verdict))
	}
	return rows
}

// pooledText is "median (min–max)", the median alone for one value.
func pooledText(m runset.Metric, p *runset.Pooled) string {
	switch {
	case p == nil:
		return "-"
	case p.N == 1:
		return m.Cell(p.Median, true)
	}
	return m.Cell(p.Median, true) + " (" + m.Cell(p.Min, true) + "–" + m.Cell(p.Max, true) + ")"
}

// repetitionLegend says what the repetition table's figures are.
const repetitionLegend = "each figure: the median (min–max) over each group's valid repetitions (invalid ones counted, never pooled), with their range (min–max: as an interval of the median it holds with probability 1−2^(1−n), 75%% at n = 3); agreement: formal output tokens within ±%s%% (|a−b|/max) and each repetition's steady-state J/token (the method's headline, drain included) within ±%s%% of the median, and, where the reports carry standard errors, Cochran's Q test of whether they differ beyond their within-run intervals; rel. range = (max−min)/median of steady-state J/token.\n"

// WriteText prints the side-by-side table, the comparability check, the
// group medians and the rank correlation.
func WriteText(w io.Writer, res Result) error {
	if err := runset.Table(w, runRows(res)); err != nil {
		return err
	}
	fmt.Fprintf(w, "\ncomparability (formal output tokens within %s%%, |a-b|/max, included runs): %s\n",
		runset.FormatValue(100*res.Tolerance, true), spreadText(res.Comparability))

	fmt.Fprintf(w, "\ngroups by %s (medians over included runs):\n", res.GroupBy)
	if err := runset.Table(w, groupRows(res)); err != nil {
		return err
	}
	if len(res.Repetitions) > 0 {
		fmt.Fprintf(w, "\nrepetition groups:\n")
		if err := runset.Table(w, repetitionRows(res)); err != nil {
			return err
		}
		b := runset.FormatValue(100*runset.AgreementBound, true)
		fmt.Fprintf(w, repetitionLegend, b, b)
	}
	for _, sw := range res.Sweeps {
		fmt.Fprintf(w, "\nsweep %s:\n", sw.Key)
		for _, p := range sw.Points {
			verdict := "meets the SLOs"
			switch {
			case !p.Measured():
				verdict = "no valid run"
			case !p.MeetsSLO:
				verdict = "misses: " + p.Why
			}
			for _, iv := range p.Invalid {
				verdict += "; left out " + iv.Run + " (" + iv.Reason + ")"
			}
			fmt.Fprintf(w, "  %-28s %s\n", p.Load, verdict)
		}
		switch {
		case sw.Knee == "":
			fmt.Fprintf(w, "  knee: none (the lightest point already misses the SLOs)\n")
		case sw.After == "":
			fmt.Fprintf(w, "  knee: %s (every point meets the SLOs; load further to find the knee)\n", sw.Knee)
		default:
			fmt.Fprintf(w, "  knee: %s; at %s: %s\n", sw.Knee, sw.After, diagText(sw.AfterDiagnosis))
		}
	}
	if res.Spearman != nil {
		_, err := fmt.Fprintf(w, "\nspearman rank correlation, steady-state vs full-lifecycle order of %d groups: %s\n",
			res.SpearmanN, runset.FormatValue(*res.Spearman, true))
		return err
	}
	_, err := fmt.Fprintf(w, "\nspearman rank correlation: - (%s)\n", res.SpearmanNote)
	return err
}

func diagText(d []string) string {
	if len(d) == 0 {
		return "no diagnosis in its report (no rule fired, or no server metrics)"
	}
	return strings.Join(d, "; ")
}

func spreadText(s Spread) string {
	switch {
	case s.Runs == 0:
		return "no run"
	case s.Runs == 1:
		return "one run"
	case s.Comparable:
		return fmt.Sprintf("ok, spread %s%%", runset.FormatValue(100*s.Ratio, true))
	}
	return fmt.Sprintf("NOT COMPARABLE, spread %s%% between %s (%d) and %s (%d)",
		runset.FormatValue(100*s.Ratio, true), s.Min, s.MinTokens, s.Max, s.MaxTokens)
}

func fmtp(v *float64) string {
	if v == nil {
		return "-"
	}
	return runset.FormatValue(*v, true)
}

// WriteJSON prints the comparison as indented JSON.
func WriteJSON(w io.Writer, res Result) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(res)
}

// WriteCSV writes one row per run (docs/cli.md, "Output"): its group and
// whether it enters the medians, then its report.json's keys.
func WriteCSV(w io.Writer, res Result) error {
	var t reportcsv.Table
	for _, r := range res.Runs {
		if err := runset.AddReportRow(&t, r.Run, reportcsv.Value("compare.group", r.Group), reportcsv.Value("compare.included", r.Included),
			reportcsv.Value("compare.excluded", r.Excluded)); err != nil {
			return err
		}
	}
	return t.Write(w)
}
