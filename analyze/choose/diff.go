package choose

import (
	"fmt"
	"io"
	"math"
	"slices"

	"golang.org/x/perf/benchmath"
	"gonum.org/v1/gonum/stat/distuv"
)

// Change is one tracked metric between two runs (or two groups of
// repetitions).
type Change struct {
	Metric    Metric
	Before    float64 // the value; the median of the repetitions
	After     float64
	HasBefore bool
	HasAfter  bool
	// Worse is the regression in percent of |Before|: positive = worse in the
	// metric's direction, negative = better. +Inf when Before is 0 and After
	// is worse. Meaningful only when both values are present.
	Worse float64
	// Significant says the change is unlikely to be noise (Test, at
	// significance level Alpha); a change that cannot be tested counts as
	// significant, so the gate falls back to the point values.
	Significant bool
	Test        string  // TestCI, TestRank or TestNone
	P           float64 // the test's p-value; NaN without a test
	// BeforeCI and AfterCI are each side's 95% interval: the run's own
	// (one run a side) or the median's across repetitions; nil when none.
	BeforeCI, AfterCI *[2]float64
	N1, N2            int // runs a side with the value
	Regressed         bool
	Note              string
}

// Significance tests of Change.Test.
const (
	// TestCI: one run a side; the within-run 95% intervals give each
	// value's standard error, (high − low)/(2·1.96), and the change is
	// significant when |after − before| exceeds 1.96 standard errors of
	// the difference (a two-sided z test at 5%).
	TestCI = "ci"
	// TestRank: repetitions; a Mann-Whitney U test across them
	// (golang.org/x/perf/benchmath, AssumeNothing), as benchstat does.
	TestRank = "u-test"
	// TestNone: no interval or too few values: judged on the point values.
	TestNone = "none"
	// Alpha is the significance level of both tests.
	Alpha = 0.05
)

// DiffResult compares an AFTER run to a BEFORE run.
type DiffResult struct {
	Before, After *Run // the first run of each side
	// BeforeRuns and AfterRuns are each side's repetitions (Before and
	// After alone for one run a side).
	BeforeRuns, AfterRuns []*Run
	Changes               []Change
	ThresholdPct          float64
	// ValidityRegressed is set when BEFORE was valid and AFTER is not.
	ValidityRegressed bool
	// SanityFailed says why AFTER's outputs failed CheckSanity; "" when they
	// passed or were not checked.
	SanityFailed string
}

// CheckSanity fails the diff when AFTER's share of empty, repeated or short
// outputs is above maxBadRatio, or cannot be established (no archive, or an
// archive without output hash and finish reason).
func (d *DiffResult) CheckSanity(maxBadRatio float64) {
	d.SanityFailed = ""
	for _, r := range d.AfterRuns {
		if why := checkSanity(r, maxBadRatio); why != "" && d.SanityFailed == "" {
			d.SanityFailed = why
		}
	}
}

// Regressions counts the failing items: metrics that regressed beyond the
// threshold, metrics that vanished, and a valid run turned invalid.
func (d DiffResult) Regressions() int {
	n := 0
	for _, c := range d.Changes {
		if c.Regressed {
			n++
		}
	}
	if d.ValidityRegressed {
		n++
	}
	if d.SanityFailed != "" {
		n++
	}
	return n
}

// Diff compares after to before over metrics, one run a side.
func Diff(before, after *Run, metrics []Metric, thresholdPct float64) DiffResult {
	return DiffRuns([]*Run{before}, []*Run{after}, metrics, thresholdPct)
}

// DiffRuns compares the AFTER runs to the BEFORE runs (each side one run
// or repetitions of one configuration) over metrics. A metric regresses
// when it got worse, in its own direction, by more than thresholdPct
// percent of its BEFORE value and the change is significant; a metric
// present before and missing after (steady state no longer reached, say)
// counts as a regression too.
func DiffRuns(before, after []*Run, metrics []Metric, thresholdPct float64) DiffResult {
	d := DiffResult{Before: before[0], After: after[0], BeforeRuns: before, AfterRuns: after, ThresholdPct: thresholdPct}
	for _, r := range after {
		d.ValidityRegressed = d.ValidityRegressed || (allValid(before) && !r.Report.Valid)
	}
	for _, m := range metrics {
		c := Change{Metric: m, P: math.NaN(), Test: TestNone, Significant: true}
		bv, bci := side(m, before)
		av, aci := side(m, after)
		c.N1, c.N2 = len(bv), len(av)
		c.HasBefore, c.HasAfter = len(bv) > 0, len(av) > 0
		c.BeforeCI, c.AfterCI = bci, aci
		if c.HasBefore {
			c.Before = median(bv)
		}
		if c.HasAfter {
			c.After = median(av)
		}
		switch {
		case c.HasBefore && c.HasAfter:
			c.Worse = worse(m, c.Before, c.After)
			c.significance(bv, av)
			c.Regressed = c.Significant && c.Worse > thresholdPct
		case c.HasBefore:
			c.Regressed, c.Note = true, "missing in AFTER"
		case c.HasAfter:
			c.Note = "new in AFTER"
		default:
			c.Note = "missing in both"
		}
		d.Changes = append(d.Changes, c)
	}
	return d
}

func allValid(runs []*Run) bool {
	for _, r := range runs {
		if !r.Report.Valid {
			return false
		}
	}
	return true
}

// side is a metric's values over a side's runs and, for one run, its
// within-run interval.
func side(m Metric, runs []*Run) ([]float64, *[2]float64) {
	var vs []float64
	for _, r := range runs {
		if v, ok := m.Value(&r.Report); ok {
			vs = append(vs, v)
		}
	}
	if len(runs) == 1 && len(vs) == 1 {
		if lo, hi, ok := runs[0].Report.CI95(m.Key); ok {
			return vs, &[2]float64{lo, hi}
		}
	}
	return vs, nil
}

// worse is the change in percent of |before| in the metric's bad direction.
func worse(m Metric, before, after float64) float64 {
	delta := after - before
	if m.Dir == Maximize {
		delta = -delta
	}
	switch {
	case delta == 0:
		return 0
	case before == 0:
		return math.Copysign(math.Inf(1), delta)
	}
	return 100 * delta / math.Abs(before)
}

// significance tests the change: the within-run intervals with one run a
// side, a rank test with repetitions; untested (significant) otherwise.
func (c *Change) significance(bv, av []float64) {
	switch {
	case len(bv) == 1 && len(av) == 1 && c.BeforeCI != nil && c.AfterCI != nil:
		c.Test = TestCI
		seB, seA := (c.BeforeCI[1]-c.BeforeCI[0])/(2*z975), (c.AfterCI[1]-c.AfterCI[0])/(2*z975)
		se := math.Hypot(seB, seA)
		diff := math.Abs(c.After - c.Before)
		switch {
		case diff == 0:
			c.P = 1
		case se == 0:
			c.P = 0
		default:
			c.P = 2 * distuv.UnitNormal.Survival(diff/se)
		}
		c.Significant = c.P < Alpha
	case len(bv) > 1 || len(av) > 1:
		c.Test = TestRank
		cmp := benchmath.AssumeNothing.Compare(sample(bv), sample(av))
		c.P = cmp.P
		c.Significant = cmp.P < Alpha
		for _, w := range cmp.Warnings {
			c.Note = w.Error()
		}
		c.BeforeCI, c.AfterCI = medianCI(bv), medianCI(av)
	}
}

// z975 is the standard normal's 97.5% quantile.
var z975 = distuv.UnitNormal.Quantile(0.975)

func sample(v []float64) *benchmath.Sample {
	return benchmath.NewSample(slices.Clone(v), &benchmath.Thresholds{CompareAlpha: Alpha})
}

// medianCI is the 95% interval of the median across repetitions
// (benchmath's order-statistic interval); nil when too few to give one.
func medianCI(v []float64) *[2]float64 {
	s := benchmath.AssumeNothing.Summary(sample(v), 0.95)
	if len(s.Warnings) > 0 || math.IsInf(s.Lo, 0) || math.IsInf(s.Hi, 0) {
		return nil
	}
	return &[2]float64{s.Lo, s.Hi}
}

func median(v []float64) float64 {
	return benchmath.AssumeNothing.Summary(sample(v), 0.95).Center
}

// WriteDiff prints the comparison as a table, one tracked metric a line,
// as benchstat does: each value with its interval's half-width, the change,
// `~` where it is not significant, and the test's p-value.
func WriteDiff(w io.Writer, d DiffResult) error {
	fmt.Fprintf(w, "before: %s (%s)\nafter:  %s (%s)\n", sideName(d.BeforeRuns), sideValidity(d.BeforeRuns), sideName(d.AfterRuns), sideValidity(d.AfterRuns))
	rows := [][]string{{"metric", "better", "before", "after", "change", "test", "status"}}
	for _, c := range d.Changes {
		change, test := "-", "-"
		if c.HasBefore && c.HasAfter {
			change = formatChange(c)
			test = formatTest(c)
		}
		status := "ok"
		switch {
		case c.Regressed && c.Note != "" && !c.HasAfter:
			status = "REGRESSED (" + c.Note + ")"
		case c.Regressed:
			status = fmt.Sprintf("REGRESSED (> %s%%)", FormatValue(d.ThresholdPct, true))
		case c.Note != "":
			status = c.Note
		}
		rows = append(rows, []string{c.Metric.Key, c.Metric.Dir.Arrow(),
			cellCI(c.Metric, c.Before, c.HasBefore, c.BeforeCI), cellCI(c.Metric, c.After, c.HasAfter, c.AfterCI), change, test, status})
	}
	if err := Table(w, rows); err != nil {
		return err
	}
	if d.ValidityRegressed {
		fmt.Fprintf(w, "REGRESSED: AFTER is %s, BEFORE was valid\n", sideValidity(d.AfterRuns))
	}
	if d.SanityFailed != "" {
		fmt.Fprintf(w, "REGRESSED: AFTER outputs: %s\n", d.SanityFailed)
	}
	fmt.Fprintf(w, "%d significant regression(s) beyond %s%% (~: not significant at p < %g)\n", d.Regressions(), FormatValue(d.ThresholdPct, true), Alpha)
	return nil
}

// cellCI is the value with "± x%", the larger half of its interval in
// percent of the value.
func cellCI(m Metric, v float64, ok bool, ci *[2]float64) string {
	cell := m.Cell(v, ok)
	if !ok || ci == nil || v == 0 {
		return cell
	}
	return fmt.Sprintf("%s ± %.0f%%", cell, 100*math.Max(ci[1]-v, v-ci[0])/math.Abs(v))
}

// formatTest is "p=0.012 n=1+1 (ci)"; "untested" without a test.
func formatTest(c Change) string {
	if c.Test == TestNone {
		return "untested"
	}
	return fmt.Sprintf("p=%.3f n=%d+%d %s", c.P, c.N1, c.N2, c.Test)
}

func sideName(runs []*Run) string {
	if len(runs) == 1 {
		return runs[0].Name
	}
	return fmt.Sprintf("%s … (%d runs)", runs[0].Name, len(runs))
}

// sideValidity is "valid", or the first invalid run's reason (with its
// name among repetitions).
func sideValidity(runs []*Run) string {
	for _, r := range runs {
		if reason := r.InvalidReason(); reason != "" && len(runs) == 1 {
			return reason
		} else if reason != "" {
			return r.Name + " " + reason
		}
	}
	return "valid"
}

// formatChange prints the raw relative change of the value (+ = went up) and
// whether that is better or worse.
func formatChange(c Change) string {
	if !c.Significant {
		return "~"
	}
	if c.Worse == 0 {
		return "0%"
	}
	word := "worse"
	if c.Worse < 0 {
		word = "better"
	}
	if math.IsInf(c.Worse, 0) {
		return "from 0, " + word
	}
	rel := 100 * (c.After - c.Before) / math.Abs(c.Before)
	return fmt.Sprintf("%+.1f%% %s", rel, word)
}
