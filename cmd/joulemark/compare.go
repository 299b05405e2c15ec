package main

import (
	"errors"
	"io"
	"os"

	"github.com/joulemark/joulemark/runset"
	"github.com/joulemark/joulemark/runset/compare"
)

// CompareCmd is `joulemark compare report.json...`.
type CompareCmd struct {
	output `kong:"-"`

	Reports   []string `arg:"" name:"report" help:"report.json files, report directories, run ids (<runs-dir>/<id>/report/, reports/<id>/) or repetition group ids (their runs)."`
	GroupBy   string   `name:"group-by" default:"scenario" help:"Dotted report key, or several joined by commas, that groups runs for the medians (scenario, run.model,run.concurrency, ...); a run with none of them groups by its run identity (its model, split by whatever identity differs), so re-runs pool and a sweep's points find each other."`
	Pool      bool     `name:"pool" help:"Pool runs of one group in its medians even when they differ in model, engine, GPU, prompt set or load point (run.*); by default such a group is split."`
	Tolerance float64  `default:"0.2" help:"Comparability bound on formal output tokens, |a-b|/max."`
	RunsDir   string   `name:"runs-dir" default:"runs" type:"path" help:"Run archive searched for <run_id>/requests.jsonl (output sanity) when none is beside a report."`
	Format    string   `default:"text" enum:"text,json,csv" help:"Output format (${enum}); csv: one row per run, report.json keys as columns (docs/cli.md)."`
	Out       string   `name:"out" type:"path" placeholder:"DIR" help:"Also write compare.html into DIR (created when missing): each sweep's J/token and p95 latencies against load with the SLOs and the knee. An existing compare.html is never overwritten."`
}

// Run prints the comparison.
func (c *CompareCmd) Run(g *Globals) error {
	set, err := loadReports(c.Reports, c.RunsDir)
	if err != nil {
		return err
	}
	res := compare.Compare(set, compare.Options{GroupBy: c.GroupBy, Tolerance: c.Tolerance, Pool: c.Pool})
	if c.Out != "" {
		if err := compare.WriteHTMLFile(c.Out, res); err != nil {
			return err
		}
	}
	switch c.Format {
	case "json":
		return compare.WriteJSON(c.out(), res)
	case "csv":
		return compare.WriteCSV(c.out(), res)
	}
	return compare.WriteText(c.out(), res)
}

// loadReports reads the reports the arguments name (files, report
// directories, run archives, run ids, repetition group ids) and pools
// their re-runs (runset.Load); an argument naming none is bad usage.
func loadReports(args []string, runsDir string) (*runset.Set, error) {
	set, err := runset.Load(args, runset.LoadOptions{RunsDir: runsDir})
	if errors.Is(err, runset.ErrNoReport) {
		return nil, withExitCode(exitUsage, err)
	}
	return set, err
}

// output is where a command prints: os.Stdout, or what a test sets.
type output struct{ stdout io.Writer }

func (o output) out() io.Writer {
	if o.stdout == nil {
		return os.Stdout
	}
	return o.stdout
}
