package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/prometheus/common/model"

	"github.com/joulemark/joulemark/analyze"
	"github.com/joulemark/joulemark/internal/clientflags"
	"github.com/joulemark/joulemark/internal/reportcsv"
	"github.com/joulemark/joulemark/report"
)

// AnalyzeCmd derives a run's report from Prometheus.
type AnalyzeCmd struct {
	Prometheus     clientflags.Prometheus `embed:"" prefix:"prometheus."`
	RunID          string                 `name:"run-id" required:"" type:"runid" help:"Run to analyze."`
	Lookback       string                 `help:"How far back from now to look for the run (Prometheus duration)."`
	Out            string                 `placeholder:"DIR" help:"Directory for report.json, report.md and report.html; must not exist or be empty (an earlier report is never overwritten). Default: the run's archive, <runs-dir>/<run-id>/report, or reports/<run-id> without one; re-analysing there keeps the earlier report as report.1, report.2, … (reports/<run-id>.1, …)."`
	Wait           time.Duration          `default:"30s" help:"Longest wait for the run's final samples when Prometheus does not hold its end yet (analyze right after bench); the bench archive's boundaries fill in meanwhile. 0: no wait."`
	Format         string                 `default:"text" enum:"text,json,csv" help:"What to print on stdout: text, json or csv (one row, report.json keys as columns)."`
	Scenario       string                 `help:"Scenario name copied into the report (compare groups by it)."`
	RunsDir        string                 `name:"runs-dir" default:"runs" placeholder:"DIR" help:"Runs directory searched for the run's archive, DIR/<run-id> (requests.jsonl): the report then counts empty, repeated and short outputs (output_sanity); a run without one there is analyzed without."`
	EngineSelector string                 `name:"engine.selector" placeholder:"MATCHERS" help:"PromQL label matchers picking the run's engine series for the server view, e.g. job=\"vllm\",instance=\"node1:8000\" (default: model_name of the run identity)."`

	Params analyzeParams `embed:""`

	QueryTimeout time.Duration `name:"query.timeout" default:"2m" help:"Timeout of each Prometheus query."`
	MaxSamples   int64         `name:"query.max-samples" default:"50000000" help:"The server's per-query sample limit (Prometheus' and Mimir's --query.max-samples, VictoriaMetrics' -search.maxSamplesPerQuery): a raw read through the query API that would load more is split in time, after a census query. 0: never split."`
	ReadAPI      string        `name:"prometheus.read-api" default:"auto" enum:"auto,remote-read,query" help:"How raw series are read: remote read (STREAMED_XOR_CHUNKS), falling back to the query API where the server lacks it (auto), or only one of them (${enum})."`
	Cost         CostFlags     `embed:"" prefix:"cost." group:"Cost and carbon"`
	memoryLimitFlag
	gcPercentFlag
	hugePagesFlag
}

// analyzeParams is analyze.Params without its methods: kong would call its
// Validate at parse time, before the defaults; analyze.Run validates them
// once. Their flags' defaults are analyze.DefaultParams' (newParser,
// defaultsFromTarget).
type analyzeParams analyze.Params

// analyzeDefaults pre-fills the analyze run command with the analysis
// defaults, which defaultsFromTarget makes the flags' defaults.
func (c *AnalyzeCmd) analyzeDefaults() {
	c.Lookback = model.Duration(analyze.DefaultLookback).String()
	c.Params = analyzeParams(analyze.DefaultParams())
}

// applyMemory sets the runtime's memory limit and collector target and
// asks for huge pages for the heap, as the flags say.
func (c *AnalyzeCmd) applyMemory(log *slog.Logger) error {
	if err := c.memoryLimitFlag.apply(log); err != nil {
		return err
	}
	if err := c.gcPercentFlag.apply(); err != nil {
		return err
	}
	return c.hugePagesFlag.apply(log)
}

// Run analyzes the run and writes the report.
func (c *AnalyzeCmd) Run(ctx context.Context, g *Globals) error {
	if c.Prometheus.URL == "" {
		c.Prometheus.URL = defaultPrometheusURL
	}
	if err := analyze.CheckPrometheusURL(c.Prometheus.URL); err != nil {
		return withExitCode(exitUsage, fmt.Errorf("--prometheus.url: %w", err))
	}
	keep := c.Out == ""
	if keep {
		c.Out = defaultReportDir(c.RunsDir, c.RunID)
	}
	lb, err := model.ParseDuration(c.Lookback)
	if err != nil {
		return usageErrorf("--lookback %q: %w", c.Lookback, err)
	}
	if lb <= 0 {
		return usageErrorf("--lookback %s: want more than 0", c.Lookback)
	}
	hc, err := c.Prometheus.HTTPConfig()
	if err != nil {
		return withExitCode(exitUsage, err)
	}
	p := analyze.Params(c.Params)
	cost, err := c.Cost.Inputs()
	if err != nil {
		return err
	}
	if err := c.applyMemory(g.Logger()); err != nil {
		return err
	}
	cfg := analyze.Config{
		PrometheusURL: c.Prometheus.URL, HTTP: hc, RunID: c.RunID, Params: p,
		Lookback: time.Duration(lb), QueryTimeout: c.QueryTimeout, OutDir: c.Out, Scenario: c.Scenario,
		RunsDir: c.RunsDir, EngineSelector: c.EngineSelector, ReadAPI: c.ReadAPI, MaxSamples: c.MaxSamples,
		Logger: g.Logger(), Wait: c.Wait, Cost: cost, KeepEarlier: keep,
	}
	// Validated once, by analyze.Run, before any query.
	r, err := analyze.Run(ctx, cfg)
	if err != nil {
		return err
	}
	g.Logger().Info("report written", "run_id", r.RunID, "dir", c.Out, "valid", r.Valid, "flags", len(r.Flags))
	switch c.Format {
	case "json":
		js, err := report.Marshal(r)
		if err == nil {
			_, err = os.Stdout.Write(js)
		}
		if err != nil {
			return err
		}
	case "csv":
		js, err := report.Marshal(r)
		if err == nil {
			err = reportcsv.WriteDocument(os.Stdout, js)
		}
		if err != nil {
			return err
		}
	default:
		if err := analyze.WriteSummary(os.Stdout, r); err != nil {
			return err
		}
	}
	if !r.Valid {
		var codes []string
		for _, f := range r.Flags {
			if f.Excluding {
				codes = append(codes, f.Code)
			}
		}
		return withExitCode(exitUnusable, fmt.Errorf("report of run %s written to %s is invalid: %s", r.RunID, c.Out, strings.Join(codes, ", ")))
	}
	return nil
}

// defaultPrometheusURL is where analyze looks without --prometheus.url, as
// Prometheus's own tools do.
const defaultPrometheusURL = "http://localhost:9090"

// defaultReportDir is the report directory without --out: report/ in the
// run's archive when there is one, else reports/<run-id>.
func defaultReportDir(runsDir, runID string) string {
	dir := ""
	if runsDir != "" {
		dir = filepath.Join(runsDir, runID)
	}
	if st, err := os.Stat(dir); dir != "" && err == nil && st.IsDir() {
		return filepath.Join(dir, "report")
	}
	return filepath.Join("reports", runID)
}
