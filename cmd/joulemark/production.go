package main

import (
	"context"
	"encoding/json"
	"time"

	"github.com/joulemark/joulemark/internal/clientflags"
	"github.com/joulemark/joulemark/production"
)

// AnalyzeGroup holds the analyses: a benchmark run (the default) and a
// production time range.
type AnalyzeGroup struct {
	Run        AnalyzeCmd           `cmd:"" default:"withargs" help:"Derive stage energy, J/token and goodput of a run from Prometheus and write the report (the default)."`
	Production AnalyzeProductionCmd `cmd:"" help:"Production energy per model and per pod over a time range: energy, tokens, J/token, idle-allocated and startup energy, unallocated GPUs."`
}

// AnalyzeProductionCmd reports production energy over a time range.
type AnalyzeProductionCmd struct {
	output `kong:"-"`

	Prometheus   clientflags.Prometheus `embed:"" prefix:"prometheus."`
	From         string                 `required:"" help:"Start of the range: RFC 3339, unix seconds, or now-DURATION (e.g. now-24h)."`
	To           string                 `default:"now" help:"End of the range, as --from."`
	Namespace    string                 `help:"Only the pods of this namespace."`
	Model        string                 `help:"Only the pods serving this model (model_name)."`
	Out          string                 `placeholder:"DIR" help:"Also write report.json, report.md and report.html into DIR; must not exist or be empty. Without it the report is only printed on stdout (--format)."`
	Format       string                 `default:"text" enum:"text,json" help:"What to print on stdout (${enum})."`
	QueryTimeout time.Duration          `name:"query.timeout" default:"2m" help:"Timeout of each Prometheus query."`
	MaxSamples   int64                  `name:"query.max-samples" default:"50000000" help:"The server's per-query sample limit (Prometheus' and Mimir's --query.max-samples, VictoriaMetrics' -search.maxSamplesPerQuery): a raw read through the query API that would load more is split in time, after a census query. 0: never split."`
	ReadAPI      string                 `name:"prometheus.read-api" default:"auto" enum:"auto,remote-read,query" help:"How raw series are read: remote read (STREAMED_XOR_CHUNKS), falling back to the query API where the server lacks it (auto), or only one of them (${enum})."`
	Cost         CostFlags              `embed:"" prefix:"cost." group:"Cost and carbon"`
	memoryLimitFlag
}

// Run reads the range, writes the report and prints the per-model figures.
func (c *AnalyzeProductionCmd) Run(ctx context.Context, g *Globals) error {
	if c.Prometheus.URL == "" {
		return usageErrorf("--prometheus.url is required")
	}
	now := time.Now()
	from, err := production.ParseTime(c.From, now)
	if err != nil {
		return usageErrorf("--from: %w", err)
	}
	to, err := production.ParseTime(c.To, now)
	if err != nil {
		return usageErrorf("--to: %w", err)
	}
	hc, err := c.Prometheus.HTTPConfig()
	if err != nil {
		return withExitCode(exitUsage, err)
	}
	cost, err := c.Cost.Inputs()
	if err != nil {
		return err
	}
	if err := c.memoryLimitFlag.apply(g.Logger()); err != nil {
		return err
	}
	cfg := production.Config{PrometheusURL: c.Prometheus.URL, HTTP: hc, From: from, To: to,
		Namespace: c.Namespace, Model: c.Model, OutDir: c.Out, QueryTimeout: c.QueryTimeout, MaxSamples: c.MaxSamples, ReadAPI: c.ReadAPI, Logger: g.Logger(), Cost: cost}
	if err := cfg.Validate(); err != nil {
		return withExitCode(exitUsage, err) // the flags' values: an end before the start, ...
	}
	r, err := production.Run(ctx, cfg)
	if err != nil {
		return err
	}
	if c.Out != "" {
		g.Logger().Info("production report written", "dir", c.Out, "models", len(r.Models), "pods", len(r.Pods))
	}
	if c.Format == "json" {
		enc := json.NewEncoder(c.out())
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	}
	return production.WriteMarkdown(c.out(), r)
}
