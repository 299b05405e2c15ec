// Command joulemark measures the GPU energy of LLM inference through
// Prometheus. This file is kong wiring only; the work lives in the packages.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/alecthomas/kong"

	"github.com/joulemark/joulemark/benchjob"
	"github.com/joulemark/joulemark/exporter"
	"github.com/joulemark/joulemark/internal/secretfile"
	"github.com/joulemark/joulemark/internal/simengine"
	"github.com/joulemark/joulemark/internal/version"
)

// Globals are the flags every subcommand takes.
type Globals struct {
	LogLevel  string           `name:"log.level" default:"info" enum:"debug,info,warn,error" help:"Log level (${enum})."`
	LogFormat string           `name:"log.format" default:"logfmt" enum:"logfmt,json" help:"Log format (${enum})."`
	Version   kong.VersionFlag `env:"-" help:"Print the version and exit."`

	logger *slog.Logger
	// logOut is where the log goes (run's stderr); secrets are the URL
	// secrets of the command's flags, scrubbed from every log record.
	logOut  io.Writer
	secrets secretfile.Secrets
}

// Logger is the process logger, configured from the global flags.
func (g *Globals) Logger() *slog.Logger {
	if g.logger == nil {
		var lvl slog.Level
		_ = lvl.UnmarshalText([]byte(g.LogLevel))
		opts := &slog.HandlerOptions{Level: lvl}
		out := g.logOut
		if out == nil {
			out = os.Stderr
		}
		if g.LogFormat == "json" {
			g.logger = slog.New(slog.NewJSONHandler(out, opts))
		} else {
			g.logger = slog.New(slog.NewTextHandler(out, opts))
		}
		g.logger = g.secrets.Logger(g.logger)
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
	Runs       RunsCmd       `cmd:"" help:"List run archives; finish a killed run (finalize); re-send a run's samples after a Prometheus outage (push)."`
	Doctor     DoctorCmd     `cmd:"" help:"Check the GPUs of this node before deploying the exporter: fields, scopes, counter period, NVML latency, permissions."`
}

// newParser is joulemark's command line: the convention of docs/cli.md
// (an environment variable per flag and command) applied to the kong
// model.
func newParser(cli *CLI, options ...kong.Option) (*kong.Kong, error) {
	// the flags' defaults (defaultsFromTarget)
	cli.Bench.Settings = benchSettings(benchjob.Defaults())
	cli.Exporter.Settings = exporterSettings(exporter.DefaultOptions())
	cli.Analyze.Run.analyzeDefaults()
	cli.Demo.demoDefaults()
	cli.SimEngine.Faults = simengine.DefaultConfig().Faults
	return kong.New(cli, append([]kong.Option{
		kong.Name("joulemark"),
		kong.Description("Energy per token of LLM inference, measured through Prometheus.\n\n" +
			"Exit codes: 0 completed and usable; 1 error, nothing measured; 2 bad usage; " +
			"3 completed but unusable (no successful request, lost phases, all samples lost, invalid report)."),
		kong.ShortUsageOnError(),
		kong.Vars{"version": version.String()},
		benchHelpVars(),
		memoryVars(),
		kong.NamedMapper("runid", runIDMapper{}),
		kong.ConfigureHelp(kong.HelpOptions{Compact: true}),
		kong.PostBuild(defaultsFromTarget),
		kong.PostBuild(applyConvention),
	}, options...)...)
}

func main() {
	ctx, stop := notifyStop() // signals.go: a second Ctrl-C stops at once
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run parses args, runs the command and returns the exit status
// (docs/cli.md): 2 for bad usage, an exitError's code, else 1 on error.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var cli CLI
	k, err := newParser(&cli, kong.Writers(stdout, stderr), kong.Exit(func(code int) { panic(exitPanic(code)) }))
	if err != nil {
		fmt.Fprintf(stderr, "joulemark: %v\n", err)
		return exitFailed
	}
	var kctx *kong.Context
	code, done := parseExit(func() { kctx, err = k.Parse(args) })
	if done {
		return code
	}
	if err != nil {
		var pe *kong.ParseError
		if errors.As(err, &pe) {
			reportError(stderr, pe.Context, visibleSuggestion(pe.Context, err), true)
			return exitUsage
		}
		fmt.Fprintf(stderr, "joulemark: %v\n", err)
		return exitUsage
	}
	// Every command's log and error lose the secrets of its URL flags
	// (secretfile.RedactURL's: passwords, secret query values), whatever
	// library quotes them.
	cli.logOut, cli.secrets = stderr, flagSecrets(kctx)
	kctx.Bind(&cli.Globals)
	kctx.BindTo(ctx, (*context.Context)(nil))
	warnExposedSecrets(kctx, cli.Logger())
	if err := runCommand(stderr, func() error { return kctx.Run(&cli.Globals) }); err != nil {
		reportError(stderr, kctx, cli.secrets.Error(err), exitCode(err) == exitUsage)
		return exitCode(err)
	}
	return 0
}

// exitPanic carries an exit status out of kong (--help, --version).
// flagSecrets are the URL secrets (password, secret query values) of
// every string flag of the command.
func flagSecrets(kctx *kong.Context) secretfile.Secrets {
	var vals []string
	for _, f := range kctx.Flags() {
		switch v := kctx.FlagValue(f).(type) {
		case string:
			vals = append(vals, v)
		case []string:
			vals = append(vals, v...)
		}
	}
	return secretfile.SecretsOf(vals...)
}

type exitPanic int

// parseExit runs parse; when kong asked to exit (help, version) it returns
// that status and true.
func parseExit(parse func()) (code int, exited bool) {
	defer func() {
		if r := recover(); r != nil {
			c, ok := r.(exitPanic)
			if !ok {
				panic(r)
			}
			code, exited = int(c), true
		}
	}()
	parse()
	return 0, false
}

// reportError prints err as one line, "joulemark <command>: <err>", then the
// command's short usage when usage is set.
func reportError(stderr io.Writer, kctx *kong.Context, err error, usage bool) {
	cmd := commandPath(kctx)
	msg := oneLine(err.Error())
	for cmd != "" && strings.HasPrefix(msg, cmd+": ") {
		msg = strings.TrimPrefix(msg, cmd+": ")
	}
	name := "joulemark"
	if cmd != "" {
		name += " " + cmd
	}
	fmt.Fprintf(stderr, "%s: %s\n", name, msg)
	if usage && kctx != nil {
		saved := kctx.Stdout
		kctx.Stdout = stderr
		_ = kctx.PrintUsage(true)
		kctx.Stdout = saved
	}
}

// oneLine joins the lines of an error message with "; ", except after a
// line that ends in ':' (an introduction such as "pre-flight failed
// (…):"), which continues with a space; empty lines are dropped.
func oneLine(msg string) string {
	var b strings.Builder
	for l := range strings.SplitSeq(msg, "\n") {
		if l = strings.TrimSpace(l); l == "" {
			continue
		}
		if s := b.String(); s != "" {
			if strings.HasSuffix(s, ":") {
				b.WriteString(" ")
			} else {
				b.WriteString("; ")
			}
		}
		b.WriteString(l)
	}
	return b.String()
}

// commandPath is the selected command, e.g. "tsdb serve" ("" for none).
func commandPath(kctx *kong.Context) string {
	if kctx == nil {
		return ""
	}
	var names []string
	for _, p := range kctx.Path {
		if p.Command != nil {
			names = append(names, p.Command.Name)
		}
	}
	return strings.Join(names, " ")
}
