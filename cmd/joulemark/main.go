// Command joulemark measures the GPU energy of LLM inference through
// Prometheus. This file is kong wiring only; the work lives in the packages.
package main

import (
	"fmt"
	"log/slog"
	"os"

	"github.com/alecthomas/kong"

	"github.com/joulemark/joulemark/internal/version"
)

// Globals are the flags every subcommand takes.
type Globals struct {
	LogLevel  string           `name:"log.level" default:"info" enum:"debug,info,warn,error" help:"Log level (${enum})."`
	LogFormat string           `name:"log.format" default:"logfmt" enum:"logfmt,json" help:"Log format (${enum})."`
	Version   kong.VersionFlag `env:"-" help:"Print the version and exit."`

	logger *slog.Logger
}

// Logger is the process logger, configured from the global flags.
func (g *Globals) Logger() *slog.Logger {
	if g.logger == nil {
		var lvl slog.Level
		_ = lvl.UnmarshalText([]byte(g.LogLevel))
		opts := &slog.HandlerOptions{Level: lvl}
		if g.LogFormat == "json" {
			g.logger = slog.New(slog.NewJSONHandler(os.Stderr, opts))
		} else {
			g.logger = slog.New(slog.NewTextHandler(os.Stderr, opts))
		}
	}
	return g.logger
}

// CLI is the whole command line.
type CLI struct {
	Globals

	Demo       DemoCmd       `cmd:"" help:"Run the whole pipeline on the embedded default: simulated GPUs, simulated engine, in-process Prometheus."`
	Exporter   ExporterCmd   `cmd:"" help:"Sample GPU power at a high rate and serve /metrics and the lifecycle phase API."`
	Phase      PhaseCmd      `cmd:"" help:"Start a lifecycle phase (or end a run) on one or more exporters."`
	Bench      BenchCmd      `cmd:"" help:"Drive an OpenAI-compatible engine through the measured lifecycle."`
	Analyze    AnalyzeGroup  `cmd:"" help:"Derive a run's report (analyze run, the default) or production energy over a time range (analyze production) from Prometheus."`
	Compare    CompareCmd    `cmd:"" help:"Compare reports side by side."`
	Pareto     ParetoCmd     `cmd:"" help:"Classify runs on the Pareto front of energy, latency, throughput and goodput."`
	Recommend  RecommendCmd  `cmd:"" help:"Recommend one run: drop those breaking a constraint, Pareto among the rest, documented tiebreak."`
	Diff       DiffCmd       `cmd:"" help:"Compare AFTER to BEFORE; exit non-zero when a tracked metric regressed (CI gate)."`
	Plan       PlanCmd       `cmd:"" help:"Capacity plan from a load sweep: admission limit, replicas for a peak rate, energy per day."`
	Rules      RulesCmd      `cmd:"" help:"Prometheus recording and alerting rules."`
	Dashboards DashboardsCmd `cmd:"" help:"Grafana dashboards."`
	SimEngine  SimEngineCmd  `cmd:"" name:"sim-engine" help:"Serve a simulated OpenAI-compatible engine."`
	TSDB       TSDBCmd       `cmd:"" name:"tsdb" help:"Embedded Prometheus data of earlier runs."`
	Doctor     DoctorCmd     `cmd:"" help:"Check the GPUs of this node before deploying the exporter: fields, scopes, counter period, NVML latency, permissions."`
}

func main() {
	var cli CLI
	ctx := kong.Parse(&cli,
		kong.Name("joulemark"),
		kong.Description("Energy per token of LLM inference, measured through Prometheus."),
		kong.UsageOnError(),
		kong.DefaultEnvars("JOULEMARK"),
		kong.Vars{"version": version.String()},
		kong.ConfigureHelp(kong.HelpOptions{Compact: true}),
	)
	ctx.Bind(&cli.Globals)
	if err := ctx.Run(&cli.Globals); err != nil {
		fmt.Fprintf(os.Stderr, "joulemark %s: %v\n", ctx.Command(), err)
		os.Exit(1)
	}
}
