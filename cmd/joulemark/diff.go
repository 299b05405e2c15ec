package main

import (
	"fmt"
	"strings"

	"github.com/joulemark/joulemark/runset"
)

// DiffCmd is `joulemark diff BEFORE AFTER --fail-on-regression 5`.
type DiffCmd struct {
	output `kong:"-"`

	Before            string   `arg:"" help:"report.json of the reference run, or the reports of its repetitions joined by commas, or their repetition group's id."`
	After             string   `arg:"" help:"report.json of the run under test, or the reports of its repetitions joined by commas, or their repetition group's id."`
	FailOnRegression  float64  `name:"fail-on-regression" default:"5" help:"Exit 4 when a tracked metric got significantly worse by more than this many percent (direction-aware), vanished, or AFTER turned invalid (a report not found exits 2, one not readable 1)."`
	MaxBadOutputRatio *float64 `name:"max-bad-output-ratio" help:"Also fail when AFTER's empty, repeated or short outputs exceed this share of its successful formal requests (reads its requests.jsonl)."`
	RunsDir           string   `name:"runs-dir" default:"runs" type:"path" help:"Run archive where run ids and repetition group ids given as BEFORE or AFTER are looked up, and searched for AFTER's <run_id>/requests.jsonl when none is beside it."`
	Format            string   `default:"text" enum:"text,json,csv" help:"Output format (${enum}); csv: one row per tracked metric."`
}

// Run prints the comparison and fails on a regression.
func (c *DiffCmd) Run(g *Globals) error {
	if c.FailOnRegression < 0 {
		return usageErrorf("--fail-on-regression %v: must not be negative", c.FailOnRegression)
	}
	before, err := loadReports(strings.Split(c.Before, ","), c.RunsDir)
	if err != nil {
		return fmt.Errorf("BEFORE: %w", err)
	}
	after, err := loadReports(strings.Split(c.After, ","), c.RunsDir)
	if err != nil {
		return fmt.Errorf("AFTER: %w", err)
	}
	if err := runset.CheckDiffSide("BEFORE", before); err != nil {
		return usageErrorf("%v", err)
	}
	if err := runset.CheckDiffSide("AFTER", after); err != nil {
		return usageErrorf("%v", err)
	}
	d := runset.DiffRuns(before, after, runset.DiffMetrics, c.FailOnRegression)
	if c.MaxBadOutputRatio != nil {
		d.CheckSanity(*c.MaxBadOutputRatio)
	}
	switch c.Format {
	case "json":
		err = runset.WriteDiffJSON(c.out(), d)
	case "csv":
		err = runset.WriteDiffCSV(c.out(), d)
	default:
		err = runset.WriteDiff(c.out(), d)
	}
	if err != nil {
		return err
	}
	if n := d.Regressions(); n > 0 {
		b, a := d.Names()
		return withExitCode(exitRegression, fmt.Errorf("%d regression(s) of %s against %s beyond %v%%", n, a, b, c.FailOnRegression))
	}
	return nil
}
