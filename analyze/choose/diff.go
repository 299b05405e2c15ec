package choose

import (
	"fmt"
	"io"
	"math"
)

// Change is one tracked metric between two runs.
type Change struct {
	Metric    Metric
	Before    float64
	After     float64
	HasBefore bool
	HasAfter  bool
	// Worse is the regression in percent of |Before|: positive = worse in the
	// metric's direction, negative = better. +Inf when Before is 0 and After
	// is worse. Meaningful only when both values are present.
	Worse     float64
	Regressed bool
	Note      string
}

// DiffResult compares an AFTER run to a BEFORE run.
type DiffResult struct {
	Before, After *Run
	Changes       []Change
	ThresholdPct  float64
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
	d.SanityFailed = checkSanity(d.After, maxBadRatio)
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

// Diff compares after to before over metrics. A metric regresses when it got
// worse, in its own direction, by more than thresholdPct percent of its
// BEFORE value; a metric present before and missing after (steady state no
// longer reached, say) counts as a regression too.
func Diff(before, after *Run, metrics []Metric, thresholdPct float64) DiffResult {
	d := DiffResult{Before: before, After: after, ThresholdPct: thresholdPct}
	d.ValidityRegressed = before.Report.Valid && !after.Report.Valid
	for _, m := range metrics {
		c := Change{Metric: m}
		c.Before, c.HasBefore = m.Value(&before.Report)
		c.After, c.HasAfter = m.Value(&after.Report)
		switch {
		case c.HasBefore && c.HasAfter:
			delta := c.After - c.Before
			if m.Dir == Maximize {
				delta = -delta
			}
			switch {
			case delta == 0:
				c.Worse = 0
			case c.Before == 0:
				c.Worse = math.Copysign(math.Inf(1), delta)
			default:
				c.Worse = 100 * delta / math.Abs(c.Before)
			}
			c.Regressed = c.Worse > thresholdPct
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

// WriteDiff prints the comparison as a table, one tracked metric a line.
func WriteDiff(w io.Writer, d DiffResult) error {
	fmt.Fprintf(w, "before: %s (%s)\nafter:  %s (%s)\n", d.Before.Name, validity(d.Before), d.After.Name, validity(d.After))
	rows := [][]string{{"metric", "better", "before", "after", "change", "status"}}
	for _, c := range d.Changes {
		change := "-"
		if c.HasBefore && c.HasAfter {
			change = formatChange(c)
		}
		status := "ok"
		switch {
		case c.Regressed && c.Note != "":
			status = "REGRESSED (" + c.Note + ")"
		case c.Regressed:
			status = fmt.Sprintf("REGRESSED (> %s%%)", FormatValue(d.ThresholdPct, true))
		case c.Note != "":
			status = c.Note
		}
		rows = append(rows, []string{c.Metric.Key, c.Metric.Dir.Arrow(),
			c.Metric.Cell(c.Before, c.HasBefore), c.Metric.Cell(c.After, c.HasAfter), change, status})
	}
	if err := Table(w, rows); err != nil {
		return err
	}
	if d.ValidityRegressed {
		fmt.Fprintf(w, "REGRESSED: AFTER is %s, BEFORE was valid\n", d.After.InvalidReason())
	}
	if d.SanityFailed != "" {
		fmt.Fprintf(w, "REGRESSED: AFTER outputs: %s\n", d.SanityFailed)
	}
	fmt.Fprintf(w, "%d regression(s) beyond %s%%\n", d.Regressions(), FormatValue(d.ThresholdPct, true))
	return nil
}

func validity(r *Run) string {
	if reason := r.InvalidReason(); reason != "" {
		return reason
	}
	return "valid"
}

// formatChange prints the raw relative change of the value (+ = went up) and
// whether that is better or worse.
func formatChange(c Change) string {
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
