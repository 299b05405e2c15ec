package main

import (
	"io"
	"os"

	"github.com/joulemark/joulemark/choose"
)

// ParetoCmd is `joulemark pareto report.json...`.
type ParetoCmd struct {
	stdout io.Writer // os.Stdout when nil; tests set it

	Reports []string `arg:"" name:"report" type:"existingfile" help:"report.json files."`
	RunsDir string   `name:"runs-dir" type:"path" help:"Run archive searched for <run_id>/requests.jsonl (output sanity) when none is beside a report."`
	Format  string   `default:"text" enum:"text,json,csv" help:"Output format (${enum}); csv: one row per run, report.json keys as columns (docs/cli.md)."`
}

// Run prints the Pareto classification.
func (c *ParetoCmd) Run(g *Globals) error {
	runs, err := choose.LoadReports(c.Reports, choose.LoadOptions{RunsDir: c.RunsDir})
	if err != nil {
		return err
	}
	classes := choose.Pareto(runs, choose.ParetoMetrics)
	switch c.Format {
	case "json":
		return choose.WriteParetoJSON(c.out(), classes, choose.ParetoMetrics)
	case "csv":
		return writeParetoCSV(c.out(), classes)
	}
	return choose.WriteParetoTable(c.out(), classes, choose.ParetoMetrics)
}

func (c *ParetoCmd) out() io.Writer {
	if c.stdout == nil {
		return os.Stdout
	}
	return c.stdout
}
