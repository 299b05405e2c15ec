package main

import (
	"fmt"

	"github.com/joulemark/joulemark/runset"
)

// ParetoCmd is `joulemark pareto report.json...`.
type ParetoCmd struct {
	output `kong:"-"`

	Reports []string `arg:"" name:"report" help:"report.json files, report directories, run ids (<runs-dir>/<id>/report/, reports/<id>/) or repetition group ids (their runs)."`
	RunsDir string   `name:"runs-dir" default:"runs" type:"path" help:"Run archive searched for <run_id>/requests.jsonl (output sanity) when none is beside a report."`
	Format  string   `default:"text" enum:"text,json,csv" help:"Output format (${enum}); csv: one row per run, report.json keys as columns (docs/cli.md)."`
	GroupBy string   `name:"group-by" placeholder:"KEYS" help:"Classify each group of runs apart, by dotted report keys joined by commas (e.g. run.model,run.concurrency); one classification over every run by default (csv: a pareto.group column)."`
	HTML    string   `name:"html" placeholder:"FILE" type:"path" help:"Also write the Pareto page to FILE: per group a scatter of steady-state J/token against throughput (front filled, dominated runs labelled with their rank, invalid runs hollow) and the table; an existing file is never overwritten."`
}

// Run prints the Pareto classification.
func (c *ParetoCmd) Run(g *Globals) error {
	set, err := loadReports(c.Reports, c.RunsDir)
	if err != nil {
		return err
	}
	// the repetitions of one configuration are one point: their medians
	runs := set.Pooled()
	if c.HTML != "" {
		if err := runset.WriteParetoHTMLFile(c.HTML, runset.ParetoGroups(runs, c.GroupBy), runset.ParetoMetrics); err != nil {
			return fmt.Errorf("pareto --html: %w", err)
		}
	}
	if c.GroupBy == "" {
		return runset.WritePareto(c.out(), c.Format, runs)
	}
	return runset.WriteParetoGroups(c.out(), c.Format, c.GroupBy, runs)
}
