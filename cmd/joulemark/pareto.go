package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/joulemark/joulemark/analyze/choose"
	"github.com/joulemark/joulemark/internal/reportcsv"
)

// ParetoCmd is `joulemark pareto report.json...`.
type ParetoCmd struct {
	stdout io.Writer // os.Stdout when nil; tests set it

	Reports []string `arg:"" name:"report" help:"report.json files, report directories or run ids (<runs-dir>/<id>/report/, reports/<id>/)."`
	RunsDir string   `name:"runs-dir" default:"runs" type:"path" help:"Run archive searched for <run_id>/requests.jsonl (output sanity) when none is beside a report."`
	Format  string   `default:"text" enum:"text,json,csv" help:"Output format (${enum}); csv: one row per run, report.json keys as columns (docs/cli.md)."`
	GroupBy string   `name:"group-by" placeholder:"KEYS" help:"Classify each group of runs apart, by dotted report keys joined by commas (e.g. run.model,run.concurrency); one classification over every run by default (csv: a pareto.group column)."`
	HTML    string   `name:"html" placeholder:"FILE" type:"path" help:"Also write the Pareto page to FILE: per group a scatter of steady-state J/token against throughput (front filled, dominated runs labelled with their rank, invalid runs hollow) and the table; an existing file is never overwritten."`
}

// Run prints the Pareto classification.
func (c *ParetoCmd) Run(g *Globals) error {
	runs, err := loadReports(c.Reports, c.RunsDir)
	if err != nil {
		return err
	}
	// the repetitions of one configuration are one point: their medians
	runs = choose.PoolRuns(runs)
	if c.HTML != "" {
		if err := c.writeHTML(runs); err != nil {
			return err
		}
	}
	if c.GroupBy == "" {
		return c.write(c.out(), runs)
	}
	order, groups := choose.GroupRuns(runs, c.GroupBy)
	switch c.Format {
	case "csv":
		var t reportcsv.Table
		for _, k := range order {
			if err := choose.AddParetoRows(&t, choose.Pareto(groups[k], choose.ParetoMetrics), reportcsv.Value("pareto.group", k)); err != nil {
				return err
			}
		}
		return t.Write(c.out())
	case "json":
		var parts []string
		for _, k := range order {
			var b bytes.Buffer
			if err := c.write(&b, groups[k]); err != nil {
				return err
			}
			key, _ := json.Marshal(k)
			parts = append(parts, `{"group": `+string(key)+`, "pareto": `+strings.TrimSpace(b.String())+`}`)
		}
		_, err := fmt.Fprintf(c.out(), "[%s]\n", strings.Join(parts, ",\n"))
		return err
	}
	for i, k := range order {
		if i > 0 {
			fmt.Fprintln(c.out())
		}
		fmt.Fprintf(c.out(), "group %s (%s):\n", k, c.GroupBy)
		if err := c.write(c.out(), groups[k]); err != nil {
			return err
		}
	}
	return nil
}

func (c *ParetoCmd) write(w io.Writer, runs []*choose.Run) error {
	classes := choose.Pareto(runs, choose.ParetoMetrics)
	switch c.Format {
	case "json":
		return choose.WriteParetoJSON(w, classes, choose.ParetoMetrics)
	case "csv":
		return choose.WriteParetoCSV(w, classes)
	}
	if _, note := choose.SteadyBasis(runs, choose.ParetoMetrics); note != "" {
		fmt.Fprintf(w, "Note: %s.\n", note)
	}
	return choose.WriteParetoTable(w, classes, choose.ParetoMetrics)
}

// writeHTML writes the Pareto page: one classification, or one per group.
func (c *ParetoCmd) writeHTML(runs []*choose.Run) error {
	var pgs []choose.ParetoGroup
	if c.GroupBy == "" {
		pgs = []choose.ParetoGroup{{Classes: choose.Pareto(runs, choose.ParetoMetrics)}}
	} else {
		order, groups := choose.GroupRuns(runs, c.GroupBy)
		for _, k := range order {
			pgs = append(pgs, choose.ParetoGroup{Name: k, Classes: choose.Pareto(groups[k], choose.ParetoMetrics)})
		}
	}
	if err := choose.WriteParetoHTMLFile(c.HTML, pgs, choose.ParetoMetrics); err != nil {
		return fmt.Errorf("pareto --html: %w", err)
	}
	return nil
}

func (c *ParetoCmd) out() io.Writer {
	if c.stdout == nil {
		return os.Stdout
	}
	return c.stdout
}
