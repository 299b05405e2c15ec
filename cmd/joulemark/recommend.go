package main

import (
	"fmt"
	"time"

	"github.com/alecthomas/units"

	"github.com/joulemark/joulemark/runset"
)

// RecommendCmd is `joulemark recommend report.json... --max-ttft-p95 ...`.
type RecommendCmd struct {
	output `kong:"-"`

	Reports []string `arg:"" name:"report" help:"report.json files, report directories, run ids (<runs-dir>/<id>/report/, reports/<id>/) or repetition group ids (their runs)."`

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
	if c.GroupBy != "" && c.Format != "text" {
		return usageErrorf("--group-by prints one recommendation per group: use --format text")
	}
	prefer, err := runset.MetricByKey(c.Prefer)
	if err != nil {
		return err
	}
	set, err := loadReports(c.Reports, c.RunsDir)
	if err != nil {
		return err
	}
	// the repetitions of one configuration are one candidate: their medians
	runs := set.Pooled()
	maxBad := -1.0
	if c.MaxBadOutputRatio != nil {
		maxBad = *c.MaxBadOutputRatio
	}
	if _, note := runset.SteadyBasis(runs, runset.ParetoMetrics); note != "" && c.Format == "text" {
		fmt.Fprintf(c.out(), "Note: %s.\n", note)
	}
	if c.GroupBy != "" {
		return runset.WriteRecommendGroups(c.out(), c.GroupBy, runs, c.constraints(), maxBad, prefer)
	}
	return runset.WriteRecommend(c.out(), c.Format, runset.Recommend(runs, c.constraints(), maxBad, runset.ParetoMetrics, prefer))
}

// constraints are the bounds of the flags given.
func (c *RecommendCmd) constraints() []runset.Constraint {
	var cs runset.Constraints
	cs.AddDuration("--max-ttft-p95", c.MaxTTFTP95, runset.TTFTP95, true)
	cs.AddDuration("--max-tpot-p95", c.MaxTPOTP95, runset.TPOTP95, true)
	cs.Add("--min-goodput", c.MinGoodput, runset.Goodput, false)
	cs.Add("--max-joules-per-token", c.MaxJoulesPerToken, runset.SteadyStateJPT, true)
	cs.Add("--max-lifecycle-joules-per-token", c.MaxLifecycleJoulesPerToken, runset.LifecycleJPT, true)
	cs.Add("--min-throughput", c.MinThroughput, runset.Throughput, false)
	cs.Add("--max-error-rate", c.MaxErrorRate, runset.ErrorRate, true)
	cs.Add("--max-startup-joules", c.MaxStartupJoules, runset.StartupEnergy, true)
	cs.Add("--min-quality", c.MinQuality, runset.QualityPassRate, false)
	if c.MaxGPUMemory != nil {
		b := float64(*c.MaxGPUMemory)
		cs.Add("--max-gpu-memory", &b, runset.GPUMemoryPeak, true)
	}
	return cs
}
