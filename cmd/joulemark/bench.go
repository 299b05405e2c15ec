package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/alecthomas/kong"

	"github.com/joulemark/joulemark/benchjob"
	"github.com/joulemark/joulemark/benchjob/experiment"
	"github.com/joulemark/joulemark/internal/clientflags"
	"github.com/joulemark/joulemark/internal/runarchive"
)

// BenchCmd drives an OpenAI-compatible engine through the measured lifecycle.
// A flag that sets an experiment setting is named after the setting's path
// in the experiment file, `_` written `-` (workload.mean_input_tokens is
// --workload.mean-input-tokens; TestBenchFlagsAreYAMLPaths); the process
// and infrastructure flags (target and exporter URLs, credentials, runs
// directory, run id, --config) keep their own names. Flag defaults are
// benchjob.Defaults' (benchDefaults), the defaults of --config too.
type BenchCmd struct {
	Config string   `name:"config" type:"existingfile" help:"Experiment file (strict YAML: one config, a matrix or a sweep); replaces the config flags below." group:"Experiment"`
	Set    []string `name:"set" sep:"none" help:"Override a setting of --config: its path in the file and a YAML value, e.g. workload.mean_input_tokens=1024 (repeatable)." group:"Experiment"`
	DryRun bool     `name:"dry-run" help:"With --config: print the expanded runs and exit." group:"Experiment"`

	Target     string             `help:"OpenAI base URL, e.g. http://host:8000/v1." group:"Target"`
	TargetHTTP clientflags.Target `embed:"" prefix:"target." group:"Target"`
	Model      string             `help:"Served model id (default: the first one /v1/models lists)." group:"Target"`
	Endpoint   string             `default:"${bench_endpoint}" enum:"completions,chat" help:"API: ${enum}." group:"Target"`

	Concurrency      int           `help:"Closed loop: N requests in flight (default ${bench_default_concurrency} when no --rate, trace or sweep is given)." group:"Load"`
	Rate             float64       `help:"Open loop: target request rate (req/s)." group:"Load"`
	Burstiness       float64       `hidden:"" help:"Open loop: gamma shape of inter-arrivals (1 = Poisson, <1 burstier)." group:"Load"`
	MaxConcurrency   int           `name:"max-concurrency" hidden:"" help:"Open loop: cap on requests in flight." group:"Load"`
	SweepConcurrency []int         `name:"sweep-concurrency" placeholder:"N" help:"Run once per concurrency, e.g. 1,2,4 (each its own run)." group:"Load"`
	SweepRate        []float64     `name:"sweep-rate" placeholder:"R" help:"Run once per rate, e.g. 1,2,4 (each its own run)." group:"Load"`
	Repeat           int           `name:"repeat" placeholder:"N" help:"Run the configuration (each sweep point) N times, each a cold lifecycle with its own run id <run-id>-rep<i>, under one repetition group that compare, pareto, recommend, plan and diff pool." group:"Load"`
	Requests         int           `name:"requests" help:"Formal requests (and/or --duration; default ${bench_default_requests} without either). Fewer than windows + 2×concurrency (${bench_steady_need} at concurrency ${bench_default_concurrency}) cannot reach the steady state: warned before the load." group:"Load"`
	Duration         time.Duration `name:"duration" help:"Formal phase length (and/or --requests)." group:"Load"`
	WarmupRequests   int           `name:"warmup-requests" default:"${bench_warmup_requests}" help:"Warm-up requests." group:"Load"`
	IdleDuration     time.Duration `name:"idle-duration" default:"${bench_idle_duration}" help:"Idle baseline before the engine starts." group:"Load"`
	MaxLag           time.Duration `name:"max-lag" hidden:"" default:"${bench_max_lag}" help:"Open loop: p99 dispatch lag past which the run is flagged client_could_not_keep_up." group:"Load"`

	MeanInputTokens    int    `name:"workload.mean-input-tokens" default:"${bench_mean_input_tokens}" group:"Workload" help:"Synthetic prompts: mean input length."`
	StddevInputTokens  int    `name:"workload.stddev-input-tokens" hidden:"" default:"${bench_stddev_input_tokens}" group:"Workload" help:"Synthetic prompts: input length standard deviation."`
	MeanOutputTokens   int    `name:"workload.mean-output-tokens" default:"${bench_mean_output_tokens}" group:"Workload" help:"Mean output length (max_tokens)."`
	StddevOutputTokens int    `name:"workload.stddev-output-tokens" hidden:"" default:"${bench_stddev_output_tokens}" group:"Workload" help:"Output length standard deviation."`
	Dataset            string `name:"workload.dataset" type:"existingfile" group:"Workload" help:"JSONL dataset ({prompt, max_tokens} or ShareGPT conversations)."`
	Trace              string `name:"workload.trace" type:"existingfile" group:"Workload" help:"Trace to replay (JSONL: time, input_tokens, output_tokens)."`
	Seed               int64  `name:"workload.seed" hidden:"" group:"Workload" help:"Workload seed (prompts, lengths, arrivals)."`
	Workload           string `name:"workload.kind" default:"synthetic" enum:"synthetic,correctness" group:"Workload" help:"synthetic (LLMPerf-style prompts) or correctness (numbers spelled out in words, answered in digits; mismatches counted per request)."`
	QualityFile        string `name:"workload.quality-file" type:"existingfile" group:"Workload" help:"YAML rubric (all / prompts[index]: contains_all, regex, forbidden) every answer is checked against; results in requests.jsonl quality."`

	IgnoreEOS      bool     `name:"extras.ignore-eos" group:"Engine extras" help:"Send ignore_eos: true: every output runs to its drawn length, so runs compare token for token and an early stop counts as a short output. Off (the default), the model stops at its end-of-sequence as in production: lengths vary and J/token per request with them; a stop is never counted short."`
	MinTokens      *int     `name:"extras.min-tokens" hidden:"" group:"Engine extras" help:"Send min_tokens."`
	Temperature    *float64 `name:"extras.temperature" group:"Engine extras" help:"Send temperature."`
	SamplingSeed   *int64   `name:"extras.seed" hidden:"" group:"Engine extras" help:"Send seed (the engine's sampling seed)."`
	MaxTokens      *int     `name:"extras.max-tokens" group:"Engine extras" help:"Send this max_tokens on every request."`
	EnableThinking *bool    `name:"extras.enable-thinking" negatable:"" hidden:"" group:"Engine extras" help:"Send chat_template_kwargs.enable_thinking true (--no-extras.enable-thinking: false); neither: not sent."`
	RequireUsage   bool     `name:"require-usage" hidden:"" group:"Engine extras" help:"Fail requests whose stream has no usage (else count chunks and flag the run)."`

	ConnectTimeout    time.Duration `name:"timeouts.connect" hidden:"" default:"${bench_timeout_connect}" group:"Timeouts" help:"Connect timeout (0: none)."`
	FirstTokenTimeout time.Duration `name:"timeouts.first-token" hidden:"" default:"${bench_timeout_first_token}" group:"Timeouts" help:"First-token timeout (0: none)."`
	TotalTimeout      time.Duration `name:"timeouts.total" default:"${bench_timeout_total}" group:"Timeouts" help:"Total timeout of one request (0: none)."`
	IdleTimeout       time.Duration `name:"timeouts.idle" hidden:"" default:"${bench_timeout_idle}" group:"Timeouts" help:"Fail a request when no byte of its answer came for this long (timeout_idle; 0: none)."`
	DrainTimeout      time.Duration `name:"timeouts.drain" hidden:"" default:"${bench_timeout_drain}" group:"Timeouts" help:"How long requests still running when the formal duration is over may finish before they are canceled (canceled_at_end; 0: canceled at once)."`

	EngineCmd        string        `name:"engine.cmd" group:"Engine" help:"Launch and own the engine (sh -c); its output goes to the archive."`
	EngineStart      string        `name:"engine.start" group:"Engine" help:"Hook that starts an externally managed engine."`
	EngineStop       string        `name:"engine.stop" group:"Engine" help:"Hook that stops it."`
	NoLifecycle      bool          `name:"engine.no-lifecycle" group:"Engine" help:"Measure an already running service (attached): formal phase only, flagged; analyze reports steady-state figures and names startup, release and full lifecycle not measured."`
	QuietWindow      time.Duration `name:"engine.quiet-window" hidden:"" group:"Engine" help:"With --engine.no-lifecycle: post an idle phase this long before the load, the running engine without load from the bench (its resident power, not the bare GPUs' baseline); 0: none."`
	ReadyTimeout     time.Duration `name:"engine.ready-timeout" hidden:"" default:"${bench_engine_ready_timeout}" group:"Engine" help:"Readiness timeout (/health, /v1/models)."`
	StopGrace        time.Duration `name:"engine.stop-grace" hidden:"" default:"${bench_engine_stop_grace}" group:"Engine" help:"SIGTERM to SIGKILL grace of --engine.cmd (0: SIGKILL right after SIGTERM)."`
	ReleaseWait      time.Duration `name:"engine.release-wait" hidden:"" default:"${bench_engine_release_wait}" group:"Engine" help:"Longest wait for the exporters to report release (0: do not wait; flagged)."`
	EngineVersion    string        `name:"engine.version" hidden:"" group:"Engine" help:"Engine version, recorded in the manifest."`
	EngineImage      string        `name:"engine.image" hidden:"" group:"Engine" help:"Engine image, recorded in the manifest."`
	ModelRevision    string        `name:"engine.model-revision" hidden:"" group:"Engine" help:"Model revision, recorded in the manifest."`
	EnginePod        string        `name:"engine.pod" placeholder:"NAMESPACE/NAME" group:"Engine" help:"Measure only the GPUs the kubelet lists for the engine's pod, resolved by the exporter (instead of --gpus): NAMESPACE/NAME, or NAMESPACE/NAME-PREFIX* for a Deployment's pod; a lifecycle's pod may start with the engine. Required (or --gpus) when the exporter knows which pods hold its GPUs."`
	EngineMetrics    bool          `name:"engine.metrics" group:"Engine" help:"Record the engine's own /metrics (queue, KV cache, preemptions) with the run."`
	EngineMetricsURL string        `name:"engine.metrics-url" hidden:"" group:"Engine" help:"Engine metrics URL (default: the target's root + /metrics)."`

	Exporter    clientflags.Exporter    `embed:"" prefix:"exporter." group:"Exporters"`
	GPUs        []string                `name:"gpus" placeholder:"UUID" group:"Exporters" help:"Measure only these GPU UUIDs (comma-separated or repeated): the engine's GPUs. Default: every GPU of the exporters, refused by one that knows which pods hold its GPUs (give --engine.pod)."`
	RemoteWrite clientflags.RemoteWrite `embed:"" prefix:"remote-write." group:"Remote write (per-request samples)"`
	Prometheus  clientflags.Prometheus  `embed:"" prefix:"prometheus." group:"Prometheus (pre-flight: the run id is new there)"`

	RunsDir  string `name:"runs-dir" default:"${bench_runs_dir}" group:"Archive" help:"Where run archives go."`
	RunID    string `name:"run-id" type:"runid" group:"Archive" help:"Run id (generated when absent; an existing one is refused)."`
	Scenario string `name:"scenario" group:"Archive" help:"Scenario name pushed in joulemark_run_info (report run.scenario; compare groups by it)."`

	set []string
}

// benchDefaults are the bench flags' defaults as kong variables, taken
// from benchjob.Defaults: flags and --config share one set of defaults.
func benchDefaults() kong.Vars {
	d := benchjob.Defaults()
	return kong.Vars{
		"bench_endpoint":             d.Endpoint,
		"bench_warmup_requests":      strconv.Itoa(d.WarmupRequests),
		"bench_idle_duration":        d.IdleDuration.String(),
		"bench_max_lag":              d.MaxLag.String(),
		"bench_mean_input_tokens":    strconv.Itoa(d.Workload.MeanInputTokens),
		"bench_stddev_input_tokens":  strconv.Itoa(d.Workload.StddevInputTokens),
		"bench_mean_output_tokens":   strconv.Itoa(d.Workload.MeanOutputTokens),
		"bench_stddev_output_tokens": strconv.Itoa(d.Workload.StddevOutputTokens),
		"bench_timeout_connect":      d.Timeouts.Connect.String(),
		"bench_timeout_first_token":  d.Timeouts.FirstToken.String(),
		"bench_timeout_total":        d.Timeouts.Total.String(),
		"bench_timeout_idle":         d.Timeouts.Idle.String(),
		"bench_timeout_drain":        d.Timeouts.Drain.String(),
		"bench_engine_ready_timeout": d.Engine.ReadyTimeout.String(),
		"bench_engine_stop_grace":    d.Engine.StopGrace.String(),
		"bench_engine_release_wait":  d.Engine.ReleaseWait.String(),
		"bench_runs_dir":             d.RunsDir,
		"bench_default_concurrency":  strconv.Itoa(benchjob.DefaultConcurrency),
		"bench_default_requests":     strconv.Itoa(benchjob.DefaultFormalRequests),
		"bench_steady_need":          strconv.Itoa(benchjob.SteadyStateNeed(benchjob.DefaultConcurrency)),
	}
}

// benchFileOnly are the settings of the experiment file that have no bench
// flag, each with the reason (docs/cli.md lists them; TestBenchFlagsAreYAMLPaths
// checks that every other setting has its flag).
var benchFileOnly = map[string]string{
	"engine.metrics_interval":         "tuning: how often the engine's /metrics is scraped",
	"remote_write.aggregate_interval": "tuning: how often the per-run aggregates are pushed",
	"remote_write.flush_timeout":      "tuning: bound of the final remote-write flush",
	"prometheus.lookback":             "tuning: how far back the pre-flight looks for the run id",
}

// benchInfra are bench's process and infrastructure flags, which keep
// their own names, with the setting of the experiment file each fills
// ("": none).
var benchInfra = map[string]string{
	"config":                         "",
	"set":                            "",
	"dry-run":                        "",
	"target.http-config-file":        "target_http",
	"target.api-key-file":            "api_key_file",
	"exporter.url":                   "exporters",
	"exporter.http-config-file":      "exporter_http",
	"exporter.bearer-token-file":     "exporter_token_file",
	"remote-write.http-config-file":  "remote_write.http",
	"remote-write.bearer-token-file": "remote_write.http",
	"prometheus.http-config-file":    "prometheus.http",
	"prometheus.bearer-token-file":   "prometheus.http",
}

// benchSetting is the path in the experiment file a bench flag sets: its name
// with `-` written `_`, or the infrastructure flag's own.
func benchSetting(flag string) (string, bool) {
	if s, ok := benchInfra[flag]; ok {
		return s, s != ""
	}
	return strings.ReplaceAll(flag, "-", "_"), true
}

// experimentFlags may go with --config.
var experimentFlags = []string{"config", "set", "dry-run", "help", "log.level", "log.format", "version"}

// AfterApply notes which config flags the command line or the environment
// gave (kong hook); defaults do not count.
func (c *BenchCmd) AfterApply(kctx *kong.Context) error {
	for _, p := range kctx.Path {
		if f := p.Flag; f != nil && !slices.Contains(experimentFlags, f.Name) && !slices.Contains(c.set, f.Name) {
			c.set = append(c.set, f.Name)
		}
	}
	for _, f := range kctx.Flags() {
		for _, env := range f.Envs {
			if _, ok := os.LookupEnv(env); ok && !slices.Contains(experimentFlags, f.Name) && !slices.Contains(c.set, f.Name) {
				c.set = append(c.set, f.Name+" (from $"+env+")")
			}
		}
	}
	return nil
}

// setHint is the --set that replaces a flag given with --config.
func setHint(flag string) string {
	name, _, _ := strings.Cut(flag, " ") // "flag (from $ENV)"
	if s, ok := benchSetting(name); ok {
		return s + "=VALUE"
	}
	return "path=value"
}

// Run builds the configs, then runs them one after the other.
func (c *BenchCmd) Run(ctx context.Context, g *Globals) error {
	var cfgs []benchjob.Config
	if c.Config != "" {
		if len(c.set) > 0 {
			return usageErrorf("--config replaces the config flags: drop --%s (use --set %s)", strings.Join(c.set, ", --"), setHint(c.set[0]))
		}
		runs, err := experiment.LoadBench(c.Config, c.Set)
		if err != nil {
			return withExitCode(exitUsage, err)
		}
		if c.DryRun {
			return experiment.WriteDryRun(os.Stdout, runs, true)
		}
		for _, r := range runs {
			if r.Name != "" && r.Config.RunID == r.Name {
				// a repeat of the experiment: fresh run ids
				if id := benchjob.FreshRunID(r.Config); id != r.Config.RunID {
					g.Logger().Info("run id taken by an earlier run of the experiment: this one is a repeat", "run_id", id, "name", r.Name)
					r.Config.RunID = id
				}
			}
			cfgs = append(cfgs, r.Config)
		}
	} else {
		if len(c.Set) > 0 || c.DryRun {
			return usageErrorf("--set and --dry-run go with --config")
		}
		cfg, err := c.config()
		if err != nil {
			return withExitCode(exitUsage, err)
		}
		// Validated once, by benchjob.Sweep, before anything starts.
		cfgs = append(cfgs, cfg)
	}
	opts := benchjob.Options{Logger: g.Logger(), HardStop: hardStop(ctx)}
	var errs []error
	var unusable []string
	for _, cfg := range cfgs {
		if ctx.Err() != nil {
			break
		}
		results, err := benchjob.Sweep(ctx, cfg, opts)
		for _, res := range results {
			fmt.Println()
			if werr := benchjob.WriteSummary(os.Stdout, res); werr != nil {
				errs = append(errs, werr)
			}
			if why := res.Unusable(); res.Status == runarchive.StatusCompleted && len(why) > 0 {
				unusable = append(unusable, "run "+res.RunID+": "+strings.Join(why, "; "))
			}
		}
		if errors.Is(err, benchjob.ErrInvalidConfig) {
			err = withExitCode(exitUsage, err)
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) == 0 && len(unusable) > 0 {
		return withExitCode(exitUnusable, fmt.Errorf("completed but unusable: %s", strings.Join(unusable, " | ")))
	}
	return errors.Join(errs...)
}

func (c *BenchCmd) config() (benchjob.Config, error) {
	cfg := benchjob.Defaults()
	cfg.Target, cfg.Model, cfg.Endpoint = c.Target, c.Model, c.Endpoint
	cfg.Concurrency, cfg.Rate, cfg.Burstiness, cfg.MaxConcurrency = c.Concurrency, c.Rate, c.Burstiness, c.MaxConcurrency
	cfg.SweepConcurrency, cfg.SweepRate, cfg.Repeat = c.SweepConcurrency, c.SweepRate, c.Repeat
	cfg.Requests, cfg.Duration, cfg.WarmupRequests, cfg.IdleDuration, cfg.MaxLag = c.Requests, c.Duration, c.WarmupRequests, c.IdleDuration, c.MaxLag
	cfg.Workload = benchjob.Workload{
		MeanInputTokens: c.MeanInputTokens, StddevInputTokens: c.StddevInputTokens,
		MeanOutputTokens: c.MeanOutputTokens, StddevOutputTokens: c.StddevOutputTokens,
		Dataset: c.Dataset, Trace: c.Trace, Seed: c.Seed, Kind: c.Workload, QualityFile: c.QualityFile,
	}
	if c.Workload == benchjob.WorkloadSynthetic {
		cfg.Workload.Kind = "" // the default, as in an experiment file
	}
	if c.IgnoreEOS {
		t := true
		cfg.Extras.IgnoreEOS = &t
	}
	cfg.Extras.MinTokens, cfg.Extras.Temperature, cfg.Extras.Seed, cfg.Extras.MaxTokens = c.MinTokens, c.Temperature, c.SamplingSeed, c.MaxTokens
	cfg.Extras.EnableThinking = c.EnableThinking
	cfg.RequireUsage = c.RequireUsage
	cfg.Timeouts.Connect, cfg.Timeouts.FirstToken, cfg.Timeouts.Total = c.ConnectTimeout, c.FirstTokenTimeout, c.TotalTimeout
	cfg.Timeouts.Idle, cfg.Timeouts.Drain = c.IdleTimeout, c.DrainTimeout
	e := &cfg.Engine
	e.Cmd, e.Start, e.Stop, e.NoLifecycle, e.QuietWindow = c.EngineCmd, c.EngineStart, c.EngineStop, c.NoLifecycle, c.QuietWindow
	e.ReadyTimeout, e.StopGrace, e.ReleaseWait = c.ReadyTimeout, c.StopGrace, c.ReleaseWait
	e.Version, e.Image, e.ModelRevision = c.EngineVersion, c.EngineImage, c.ModelRevision
	e.Pod, e.Metrics, e.MetricsURL = c.EnginePod, c.EngineMetrics, c.EngineMetricsURL
	cfg.Exporters, cfg.ExporterTokenFile, cfg.APIKeyFile = c.Exporter.URLs, c.Exporter.HTTP.BearerTokenFile, c.TargetHTTP.APIKeyFile
	cfg.ExporterGPUs = c.GPUs
	var err error
	if cfg.TargetHTTP, err = c.TargetHTTP.HTTPConfig(); err != nil {
		return cfg, err
	}
	if cfg.ExporterHTTP, err = c.Exporter.HTTPConfig(); err != nil {
		return cfg, err
	}
	cfg.RemoteWrite.URL = c.RemoteWrite.URL
	if cfg.RemoteWrite.HTTP, err = c.RemoteWrite.HTTPConfig(); err != nil {
		return cfg, err
	}
	cfg.Prometheus.URL = c.Prometheus.URL
	if cfg.Prometheus.HTTP, err = c.Prometheus.HTTPConfig(); err != nil {
		return cfg, err
	}
	cfg.RunsDir, cfg.RunID, cfg.Scenario = c.RunsDir, c.RunID, c.Scenario
	return cfg, nil
}
