package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/alecthomas/units"

	"github.com/joulemark/joulemark/analyze/choose"
)

// RecommendCmd is `joulemark recommend report.json... --max-ttft-p95 ...`.
type RecommendCmd struct {
	stdout io.Writer // os.Stdout when nil; tests set it

	Reports []string `arg:"" name:"report" help:"report.json files, report directories or run ids (<runs-dir>/<id>/report/, reports/<id>/)."`

	MaxTTFTP95                 *time.Duration    `name:"max-ttft-p95" help:"Drop runs whose p95 TTFT is above this (e.g. 500ms)."`
	MaxTPOTP95                 *time.Duration    `name:"max-tpot-p95" help:"Drop runs whose p95 TPOT is above this (e.g. 50ms)."`
	MinGoodput                 *float64          `name:"min-goodput" help:"Drop runs whose goodput ratio is below this (0..1)."`
	MaxJoulesPerToken          *float64          `name:"max-joules-per-token" help:"Drop runs whose steady-state J/token is above this."`
	MaxLifecycleJoulesPerToken *float64          `name:"max-lifecycle-joules-per-token" help:"Drop runs whose full-lifecycle J/token is above this."`
	MinThroughput              *float64          `name:"min-throughput" help:"Drop runs below this many output tokens per second."`
	MaxErrorRate               *float64          `name:"max-error-rate" help:"Drop runs whose error rate is above this (0..1)."`
	MaxStartupJoules           *float64          `name:"max-startup-joules" help:"Drop runs whose startup (+ warm-up) energy is above this."`
	MaxGPUMemory               *units.Base2Bytes `name:"max-gpu-memory" help:"Drop runs whose largest single-GPU memory peak over the formal phase (gpu_memory.max_gpu_peak_bytes) is above this (e.g. 60GiB); a run without GPU memory data is dropped."`
	MinQuality                 *float64          `name:"min-quality" help:"Drop runs whose checked answers pass their rubric less often than this (quality.pass_rate, 0..1); a run without quality verdicts is dropped."`
	MaxBadOutputRatio          *float64          `name:"max-bad-output-ratio" help:"Drop runs whose empty, repeated or short outputs exceed this share of successful formal requests (needs requests.jsonl)."`

	Prefer  string `default:"steady_state.joules_per_token" help:"Metric that breaks ties on the front (a report key of a tracked metric)."`
	GroupBy string `name:"group-by" placeholder:"KEYS" help:"Recommend within each group of runs apart, by dotted report keys joined by commas (e.g. run.model); one recommendation over every run by default (text only)."`
	RunsDir string `name:"runs-dir" default:"runs" type:"path" help:"Run archive searched for <run_id>/requests.jsonl when none is beside a report."`
	Format  string `default:"text" enum:"text,json,csv" help:"Output format (${enum}); csv: one row per run, report.json keys as columns (docs/cli.md)."`
}

// Run prints the recommendation and why every other run was excluded; it
// fails when no run meets every constraint.
func (c *RecommendCmd) Run(g *Globals) error {
	prefer, err := choose.MetricByKey(c.Prefer)
	if err != nil {
		return err
	}
	runs, err := loadReports(c.Reports, c.RunsDir)
	if err != nil {
		return err
	}
	var cons []choose.Constraint
	add := func(v *float64, m choose.Metric, upper bool, flag string) {
		if v != nil {
			cons = append(cons, choose.Constraint{Metric: m, Bound: *v, Upper: upper, Flag: flag})
		}
	}
	add(seconds(c.MaxTTFTP95), choose.TTFTP95, true, "--max-ttft-p95")
	add(seconds(c.MaxTPOTP95), choose.TPOTP95, true, "--max-tpot-p95")
	add(c.MinGoodput, choose.Goodput, false, "--min-goodput")
	add(c.MaxJoulesPerToken, choose.SteadyStateJPT, true, "--max-joules-per-token")
	add(c.MaxLifecycleJoulesPerToken, choose.LifecycleJPT, true, "--max-lifecycle-joules-per-token")
	add(c.MinThroughput, choose.Throughput, false, "--min-throughput")
	add(c.MaxErrorRate, choose.ErrorRate, true, "--max-error-rate")
	add(c.MaxStartupJoules, choose.StartupEnergy, true, "--max-startup-joules")
	add(c.MinQuality, choose.QualityPassRate, false, "--min-quality")
	if c.MaxGPUMemory != nil {
		b := float64(*c.MaxGPUMemory)
		add(&b, choose.GPUMemoryPeak, true, "--max-gpu-memory")
	}
	maxBad := -1.0
	if c.MaxBadOutputRatio != nil {
		maxBad = *c.MaxBadOutputRatio
	}
	if _, note := choose.SteadyBasis(runs, choose.ParetoMetrics); note != "" && c.Format != "json" && c.Format != "csv" {
		fmt.Fprintf(c.out(), "Note: %s.\n", note)
	}
	if c.GroupBy == "" {
		rec := choose.Recommend(runs, cons, maxBad, choose.ParetoMetrics, prefer)
		switch c.Format {
		case "json":
			err = choose.WriteRecommendJSON(c.out(), rec, choose.ParetoMetrics)
		case "csv":
			err = choose.WriteRecommendCSV(c.out(), rec)
		default:
			return choose.WriteRecommendation(c.out(), rec, choose.ParetoMetrics)
		}
		if err == nil && rec.Best == nil {
			err = choose.ErrNoSurvivor
		}
		return err
	}
	if c.Format != "text" {
		return usageErrorf("--group-by prints one recommendation per group: use --format text")
	}
	order, groups := choose.GroupRuns(runs, c.GroupBy)
	var failed []string
	for i, k := range order {
		if i > 0 {
			fmt.Fprintln(c.out())
		}
		fmt.Fprintf(c.out(), "group %s (%s):\n", k, c.GroupBy)
		rec := choose.Recommend(groups[k], cons, maxBad, choose.ParetoMetrics, prefer)
		if err := choose.WriteRecommendation(c.out(), rec, choose.ParetoMetrics); err != nil {
			failed = append(failed, k)
		}
	}
	if len(failed) == len(order) {
		return fmt.Errorf("no run meets every constraint in any group (%s): %w", strings.Join(failed, "; "), choose.ErrNoSurvivor)
	}
	return nil
}

// seconds converts an optional duration flag to seconds.
func seconds(d *time.Duration) *float64 {
	if d == nil {
		return nil
	}
	s := d.Seconds()
	return &s
}

func (c *RecommendCmd) out() io.Writer {
	if c.stdout == nil {
		return os.Stdout
	}
	return c.stdout
}
