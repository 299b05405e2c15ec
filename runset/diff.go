package runset

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

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
	// BeforeSE and AfterSE are each run's standard error with its degrees
	// of freedom, from its report's intervals.figures (one run a side);
	// zero for an older report, whose CI95 width over 2·1.96 stands in.
	BeforeSE, AfterSE stdErr
	// BeforeRange and AfterRange are the min–max of a side's values when
	// it has two or more; nil otherwise.
	BeforeRange, AfterRange *[2]float64
	N1, N2                  int // runs a side with the value
	Regressed               bool
	Note                    string
}

// Significance tests of Change.Test.
const (
	// TestCI: one run a side; each report's intervals give its value's
	// standard error and degrees of freedom (intervals.figures: batch
	// means over time) and Welch's t test decides at 5%; an older report
	// without them stands in (high − low)/(2·1.96) and the z test.
	TestCI = "ci"
	// TestRank: repetitions; a Mann-Whitney U test across them
	// (golang.org/x/perf/benchmath, AssumeNothing), as benchstat does.
	TestRank = "u-test"
	// TestRange: repetitions too few for the U test to reach p < Alpha
	// whatever their values (3 a side, 2 against 7, one run against
	// fewer than 39): the change counts when the two sides' min–max
	// ranges are apart (every value of one side beyond every value of
	// the other), i.e. beyond the repetitions' own spread; P is still the
	// U test's. At 3 a side ranges apart is the U test's most extreme
	// outcome, p = 0.1 (one-sided 0.05).
	TestRange = "range"
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
	// BeforePool and AfterPool are the sides that are two or more
	// repetitions of one group (poolRepetitions); nil otherwise.
	BeforePool, AfterPool *RepetitionPool
	// Warnings name the pooled sides whose repetitions disagree.
	Warnings []string
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

// DiffRuns compares the AFTER runs to the BEFORE runs (each side one run
// or repetitions of one configuration) over metrics. A metric regresses
// when it got worse, in its own direction, by more than thresholdPct
// percent of its BEFORE value and the change is significant; a metric
// present before and missing after (steady state no longer reached, say)
// counts as a regression too. A side of several runs is judged on its
// valid ones (all of them when none is valid); an invalid one still
// makes AFTER's validity regress.
func DiffRuns(beforeSet, afterSet *Set, metrics []Metric, thresholdPct float64) DiffResult {
	before, after := beforeSet.Runs, afterSet.Runs
	d := DiffResult{Before: before[0], After: after[0], BeforeRuns: before, AfterRuns: after, ThresholdPct: thresholdPct,
		BeforePool: sidePool(beforeSet), AfterPool: sidePool(afterSet)}
	for _, r := range after {
		d.ValidityRegressed = d.ValidityRegressed || (allValid(before) && !r.Report.Valid)
	}
	for label, p := range map[string]*RepetitionPool{"BEFORE": d.BeforePool, "AFTER": d.AfterPool} {
		if a := p.agreement(); strings.HasPrefix(a.Verdict, "disagree") {
			d.Warnings = append(d.Warnings, fmt.Sprintf("%s %s: its repetitions %s", label, p.Name, a.Verdict))
		}
	}
	slices.Sort(d.Warnings)
	bRuns, aRuns := validSide(before), validSide(after)
	for _, m := range metrics {
		d.Changes = append(d.Changes, diffMetric(m, bRuns, aRuns, thresholdPct))
	}
	return d
}

// diffMetric is the change of m from the before runs to the after runs.
func diffMetric(m Metric, before, after []*Run, thresholdPct float64) Change {
	c := Change{Metric: m, P: math.NaN(), Test: TestNone, Significant: true}
	bv, bci, bse := side(m, before)
	av, aci, ase := side(m, after)
	c.BeforeSE, c.AfterSE = bse, ase
	c.N1, c.N2 = len(bv), len(av)
	c.HasBefore, c.HasAfter = len(bv) > 0, len(av) > 0
	c.BeforeCI, c.AfterCI = bci, aci
	c.BeforeRange, c.AfterRange = valueRange(bv), valueRange(av)
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
	return c
}

// sidePool is the repetition pool a side of two or more runs is, or nil
// when it is one run or not the repetitions of one group.
func sidePool(s *Set) *RepetitionPool {
	if len(s.Runs) < 2 {
		return nil
	}
	if len(s.Pools) == 1 && len(s.Pools[0].Runs) == len(s.Runs) {
		return s.Pools[0]
	}
	return nil
}

// agreement is the pool's Agreement; the zero value for no pool.
func (p *RepetitionPool) agreement() Agreement {
	if p == nil {
		return Agreement{}
	}
	return p.Agreement()
}

// validSide is the runs a side's figures come from: a single run, else
// the valid ones, else (none valid) all of them.
func validSide(runs []*Run) []*Run {
	if len(runs) < 2 {
		return runs
	}
	valid := slices.DeleteFunc(slices.Clone(runs), func(r *Run) bool { return r.InvalidReason() != "" })
	if len(valid) == 0 {
		return runs
	}
	return valid
}

// CheckDiffSide refuses a side of several runs that are not one
// configuration's repetitions: runs of two repetition groups (or two
// identities under one group id), or repetitions mixed with runs of no
// group. Runs of no group at all are taken as the caller's repetitions
// (reports from before repetition groups).
func CheckDiffSide(label string, s *Set) error {
	runs, pools := s.Runs, s.Pools
	if len(runs) < 2 {
		return nil
	}
	var names []string
	in := 0
	for _, p := range pools {
		names = append(names, p.Name)
		in += len(p.Runs)
	}
	switch {
	case len(pools) > 1:
		return fmt.Errorf("%s holds the repetitions of %d configurations (%s): diff compares one a side", label, len(pools), strings.Join(names, "; "))
	case len(pools) == 1 && in < len(runs):
		return fmt.Errorf("%s mixes the repetitions of %s with %d run(s) of no repetition group: diff compares one configuration a side", label, names[0], len(runs)-in)
	}
	return nil
}

// valueRange is the min–max of two or more values; nil for fewer.
func valueRange(v []float64) *[2]float64 {
	if len(v) < 2 {
		return nil
	}
	return &[2]float64{slices.Min(v), slices.Max(v)}
}

func allValid(runs []*Run) bool {
	for _, r := range runs {
		if !r.Report.Valid {
			return false
		}
	}
	return true
}

// stdErr is a within-run standard error and its degrees of freedom (0:
// unknown, normal).
type stdErr struct {
	SE float64
	DF int
}

// side is a metric's values over a side's runs and, for one run, its
// within-run interval and standard error.
func side(m Metric, runs []*Run) ([]float64, *[2]float64, stdErr) {
	var vs []float64
	for _, r := range runs {
		if v, ok := m.Value(&r.Report); ok {
			vs = append(vs, v)
		}
	}
	if len(runs) == 1 && len(vs) == 1 {
		if lo, hi, ok := runs[0].Report.CI95(m.Key); ok {
			se := stdErr{SE: (hi - lo) / (2 * z975)}
			if s, df, ok := runs[0].Report.IntervalSE(m.Key); ok {
				se = stdErr{SE: s, DF: df}
			}
			return vs, &[2]float64{lo, hi}, se
		}
	}
	return vs, nil, stdErr{}
}

// welchP is the two-sided p-value of a difference diff between two
// values with standard errors a and b: Welch's t test with the
// Welch–Satterthwaite degrees of freedom when both know theirs, the
// normal (z) test otherwise (older reports' intervals).
func welchP(diff float64, a, b stdErr) float64 {
	se := math.Hypot(a.SE, b.SE)
	switch {
	case diff == 0:
		return 1
	case se == 0:
		return 0
	case a.DF < 1 || b.DF < 1:
		return 2 * distuv.UnitNormal.Survival(diff/se)
	}
	va, vb := a.SE*a.SE, b.SE*b.SE
	df := (va + vb) * (va + vb) / (va*va/float64(a.DF) + vb*vb/float64(b.DF))
	return 2 * distuv.StudentsT{Mu: 0, Sigma: 1, Nu: df}.Survival(diff/se)
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
		c.P = welchP(math.Abs(c.After-c.Before), c.BeforeSE, c.AfterSE)
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
		if uTestMinP(len(bv), len(av)) >= Alpha {
			c.Test, c.Significant = TestRange, rangesApart(bv, av)
			c.Note = fmt.Sprintf("%d+%d too few for p < %g: judged on the min–max ranges", len(bv), len(av), Alpha)
		}
	}
}

// uTestMinP is the smallest two-sided p-value the Mann-Whitney U test can
// give samples of n1 and n2 values (no ties): 2/C(n1+n2, n1), capped at 1.
func uTestMinP(n1, n2 int) float64 {
	c := 1.0
	for i := 1; i <= n1; i++ {
		c = c * float64(n2+i) / float64(i)
	}
	return min(1, 2/c)
}

// rangesApart reports whether every value of one side lies beyond every
// value of the other: the change is beyond the repetitions' own spread.
func rangesApart(bv, av []float64) bool {
	return slices.Max(bv) < slices.Min(av) || slices.Max(av) < slices.Min(bv)
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
	fmt.Fprintf(w, "before: %s\nafter:  %s\n", sideLine(d.BeforeRuns, d.BeforePool), sideLine(d.AfterRuns, d.AfterPool))
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
			cellCI(c.Metric, c.Before, c.HasBefore, c.BeforeCI, c.BeforeRange), cellCI(c.Metric, c.After, c.HasAfter, c.AfterCI, c.AfterRange), change, test, status})
	}
	if err := Table(w, rows); err != nil {
		return err
	}
	for _, s := range d.Warnings {
		fmt.Fprintf(w, "warning: %s\n", s)
	}
	if d.ValidityRegressed {
		fmt.Fprintf(w, "REGRESSED: AFTER is %s, BEFORE was valid\n", sideValidity(d.AfterRuns))
	}
	if d.SanityFailed != "" {
		fmt.Fprintf(w, "REGRESSED: AFTER outputs: %s\n", d.SanityFailed)
	}
	fmt.Fprintf(w, "%d significant regression(s) beyond %s%% (~: not significant at p < %g)\n", d.Regressions(), FormatValue(d.ThresholdPct, true), Alpha)
	if slices.ContainsFunc(d.Changes, func(c Change) bool { return c.Test == TestRange }) {
		fmt.Fprintf(w, "ranges: too few repetitions for the U test to reach p < %g; a change counts when the min–max ranges are apart, beyond the repetitions' own spread\n", Alpha)
	}
	return nil
}

// cellCI is the value with "± x%", the larger half of its interval in
// percent of the value, then the range of repetitions: "0.3 (0.29–0.31)".
func cellCI(m Metric, v float64, ok bool, ci, rng *[2]float64) string {
	cell := m.Cell(v, ok)
	if !ok {
		return cell
	}
	if ci != nil && v != 0 {
		cell = fmt.Sprintf("%s ± %.0f%%", cell, 100*math.Max(ci[1]-v, v-ci[0])/math.Abs(v))
	}
	if rng != nil {
		cell += " (" + m.Cell(rng[0], true) + "–" + m.Cell(rng[1], true) + ")"
	}
	return cell
}

// formatTest is "p=0.012 n=1+1 ci"; "ranges apart (p=0.100 n=3+3)"
// when judged on the ranges; "untested" without a test.
func formatTest(c Change) string {
	switch {
	case c.Test == TestNone:
		return "untested"
	case c.Test == TestRange && c.Significant:
		return fmt.Sprintf("ranges apart (p=%.3f n=%d+%d)", c.P, c.N1, c.N2)
	case c.Test == TestRange:
		return fmt.Sprintf("ranges overlap (p=%.3f n=%d+%d)", c.P, c.N1, c.N2)
	}
	return fmt.Sprintf("p=%.3f n=%d+%d %s", c.P, c.N1, c.N2, c.Test)
}

func sideName(runs []*Run) string {
	if len(runs) == 1 {
		return runs[0].Name
	}
	return fmt.Sprintf("%s … (%d runs)", runs[0].Name, len(runs))
}

// sideLine names a side and says its validity: "run (valid)", or for a
// repetition pool "group (median [min-max] of k valid of n repetitions;
// …; agree)" (poolNote).
func sideLine(runs []*Run, p *RepetitionPool) string {
	switch {
	case p != nil && len(p.Valid) == 0:
		return fmt.Sprintf("%s (no valid repetition of %d: its figures are the invalid ones' medians; %s)", p.Name, len(p.Runs), sideValidity(runs))
	case p != nil:
		return fmt.Sprintf("%s (%s)", p.Name, poolNote(p))
	}
	return fmt.Sprintf("%s (%s)", sideName(runs), sideValidity(runs))
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
