package main

import (
	"time"

	"github.com/joulemark/joulemark/runset"
)

// PlanCmd is `joulemark plan report.json... --target-peak-rate R --slo-...`.
type PlanCmd struct {
	output `kong:"-"`

	Reports        []string       `arg:"" name:"report" help:"report.json files, report directories, run ids or repetition group ids of a concurrency or rate sweep, one per load point (a point's repetitions are pooled: their medians)."`
	TargetPeakRate float64        `name:"target-peak-rate" required:"" help:"Peak request rate to serve, requests per second."`
	SLOTTFTP95     *time.Duration `name:"slo.ttft-p95" help:"SLO on p95 TTFT (e.g. 500ms)."`
	SLOTPOTP95     *time.Duration `name:"slo.tpot-p95" help:"SLO on p95 TPOT (e.g. 50ms)."`
	MinGoodput     *float64       `name:"min-goodput" help:"SLO on the goodput ratio (0..1)."`
	MaxErrorRate   *float64       `name:"max-error-rate" help:"SLO on the error rate (0..1)."`
	RestartsPerDay float64        `name:"restarts-per-day" default:"1" help:"Engine startups (and releases) per replica per day, for the energy of a day."`
	Cost           CostFlags      `embed:"" prefix:"cost." group:"Cost and carbon"`
	RunsDir        string         `name:"runs-dir" default:"runs" type:"path" help:"Run archive searched for <run_id>/manifest.json (the configured load) when none is beside a report."`
	Pool           bool           `name:"pool" help:"Plan over runs that differ in model, engine, GPU or prompt set (run.*); by default they are refused."`
	Out            string         `type:"path" help:"Also write the plan as JSON to this file (never overwrites)."`
	Format         string         `default:"text" enum:"text,json,csv" help:"Output format (${enum}); csv: one row per load point."`
}

// Run prints the plan and, with --out, writes it.
func (c *PlanCmd) Run(g *Globals) error {
	var slos runset.Constraints
	slos.AddDuration("--slo.ttft-p95", c.SLOTTFTP95, runset.TTFTP95, true)
	slos.AddDuration("--slo.tpot-p95", c.SLOTPOTP95, runset.TPOTP95, true)
	slos.Add("--min-goodput", c.MinGoodput, runset.Goodput, false)
	slos.Add("--max-error-rate", c.MaxErrorRate, runset.ErrorRate, true)
	if len(slos) == 0 {
		return usageErrorf("give at least one SLO (--slo.ttft-p95, --slo.tpot-p95, --min-goodput, --max-error-rate)")
	}
	cost, err := c.Cost.Inputs()
	if err != nil {
		return err
	}
	set, err := loadReports(c.Reports, c.RunsDir)
	if err != nil {
		return err
	}
	// the repetitions of one load point are one point: their medians
	runs := set.Pooled()
	p, planErr := runset.MakePlan(runs, runset.PlanOptions{TargetPeakRateRPS: c.TargetPeakRate, SLOs: slos, RestartsPerDay: c.RestartsPerDay, Pool: c.Pool, Cost: cost})
	if p.Points == nil && planErr != nil {
		return planErr
	}
	switch c.Format {
	case "json":
		err = runset.WritePlanJSON(c.out(), p)
	case "csv":
		err = runset.WritePlanCSV(c.out(), p)
	default:
		err = runset.WritePlan(c.out(), p)
	}
	if err != nil {
		return err
	}
	if planErr != nil {
		return planErr
	}
	if c.Out != "" {
		return runset.WritePlanFile(c.Out, p)
	}
	return nil
}
