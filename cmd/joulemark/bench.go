package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/alecthomas/kong"
	"github.com/prometheus/common/config"

	"github.com/joulemark/joulemark/benchjob"
	"github.com/joulemark/joulemark/experiment"
)

// BenchCmd drives an OpenAI-compatible engine through the measured lifecycle.
type BenchCmd struct {
	Config string   `name:"config" type:"existingfile" help:"Experiment file (strict YAML: one config, a matrix or a sweep); replaces the config flags below." group:"Experiment"`
	Set    []string `name:"set" sep:"none" help:"Override a config field of --config, e.g. --set concurrency=8 (repeatable)." group:"Experiment"`
	DryRun bool     `name:"dry-run" help:"With --config: print the expanded runs and exit." group:"Experiment"`

	Target   string `help:"OpenAI base URL, e.g. http://host:8000/v1." group:"Target"`
	Model    string `help:"Served model id (default: the first one /v1/models lists)." group:"Target"`
	Endpoint string `default:"completions" enum:"completions,chat" help:"API: ${enum}." group:"Target"`

	Concurrency      int           `help:"Closed loop: N requests in flight." group:"Load"`
	Rate             float64       `help:"Open loop: target request rate (req/s)." group:"Load"`
	Burstiness       float64       `help:"Open loop: gamma shape of inter-arrivals (1 = Poisson, <1 burstier)." group:"Load"`
	MaxConcurrency   int           `name:"max-concurrency" help:"Open loop: cap on requests in flight." group:"Load"`
	SweepConcurrency []int         `name:"sweep-concurrency" help:"Run once per concurrency, e.g. 1,2,4 (each its own run)." group:"Load"`
	SweepRate        []float64     `name:"sweep-rate" help:"Run once per rate, e.g. 1,2,4 (each its own run)." group:"Load"`
	Requests         int           `help:"Formal requests (and/or --duration)." group:"Load"`
	Duration         time.Duration `help:"Formal phase length (and/or --requests)." group:"Load"`
	WarmupRequests   int           `name:"warmup-requests" default:"8" help:"Warm-up requests." group:"Load"`
	IdleDuration     time.Duration `name:"idle-duration" default:"20s" help:"Idle baseline before the engine starts." group:"Load"`
	MaxLag           time.Duration `name:"max-lag" default:"50ms" help:"Open loop: p99 dispatch lag past which the run is flagged client_could_not_keep_up." group:"Load"`

	MeanInputTokens    int    `name:"mean-input-tokens" default:"550" group:"Workload" help:"Synthetic prompts: mean input length."`
	StddevInputTokens  int    `name:"stddev-input-tokens" default:"150" group:"Workload" help:"Synthetic prompts: input length standard deviation."`
	MeanOutputTokens   int    `name:"mean-output-tokens" default:"150" group:"Workload" help:"Mean output length (max_tokens)."`
	StddevOutputTokens int    `name:"stddev-output-tokens" default:"10" group:"Workload" help:"Output length standard deviation."`
	Dataset            string `type:"existingfile" group:"Workload" help:"JSONL dataset ({prompt, max_tokens} or ShareGPT conversations)."`
	Trace              string `type:"existingfile" group:"Workload" help:"Trace to replay (JSONL: time, input_tokens, output_tokens)."`
	Seed               int64  `group:"Workload" help:"Workload seed (prompts, lengths, arrivals)."`
	Workload           string `name:"workload" default:"synthetic" enum:"synthetic,correctness" group:"Workload" help:"synthetic (LLMPerf-style prompts) or correctness (numbers spelled out in words, answered in digits; mismatches counted per request)."`
	QualityFile        string `name:"quality-file" type:"existingfile" group:"Workload" help:"YAML rubric (all / prompts[index]: contains_all, regex, forbidden) every answer is checked against; results in requests.jsonl quality."`

	IgnoreEOS    bool     `name:"ignore-eos" group:"Engine extras" help:"Send ignore_eos: true."`
	MinTokens    *int     `name:"min-tokens" group:"Engine extras" help:"Send min_tokens."`
	Temperature  *float64 `group:"Engine extras" help:"Send temperature."`
	SamplingSeed *int64   `name:"sampling-seed" group:"Engine extras" help:"Send seed (the engine's sampling seed)."`
	MaxTokens    *int     `name:"max-tokens" group:"Engine extras" help:"Send this max_tokens on every request."`
	Thinking     string   `default:"default" enum:"default,on,off" group:"Engine extras" help:"chat_template_kwargs.enable_thinking: ${enum}."`
	RequireUsage bool     `name:"require-usage" group:"Engine extras" help:"Fail requests whose stream has no usage (else count chunks and flag the run)."`

	ConnectTimeout    time.Duration `name:"connect-timeout" default:"10s" group:"Timeouts" help:"Connect timeout."`
	FirstTokenTimeout time.Duration `name:"first-token-timeout" default:"0" group:"Timeouts" help:"First-token timeout (0: none)."`
	RequestTimeout    time.Duration `name:"request-timeout" default:"0" group:"Timeouts" help:"Total timeout of one request (0: none)."`

	EngineCmd     string        `name:"engine-cmd" group:"Lifecycle" help:"Launch and own the engine (sh -c); its output goes to the archive."`
	EngineStart   string        `name:"engine-start" group:"Lifecycle" help:"Hook that starts an externally managed engine."`
	EngineStop    string        `name:"engine-stop" group:"Lifecycle" help:"Hook that stops it."`
	NoLifecycle   bool          `name:"no-lifecycle" group:"Lifecycle" help:"Measure an already running service: formal phase only, flagged."`
	ReadyTimeout  time.Duration `name:"ready-timeout" default:"10m" group:"Lifecycle" help:"Readiness timeout (/health, /v1/models)."`
	StopGrace     time.Duration `name:"stop-grace" default:"30s" group:"Lifecycle" help:"SIGTERM to SIGKILL grace of --engine-cmd."`
	ReleaseWait   time.Duration `name:"release-wait" default:"30m" group:"Lifecycle" help:"Longest wait for the exporters to report release."`
	EngineVersion string        `name:"engine-version" group:"Lifecycle" help:"Engine version, recorded in the manifest."`
	EngineImage   string        `name:"engine-image" group:"Lifecycle" help:"Engine image, recorded in the manifest."`
	ModelRevision string        `name:"model-revision" group:"Lifecycle" help:"Model revision, recorded in the manifest."`

	Exporter              []string          `name:"exporter" group:"Wiring" help:"Exporter base URL (repeatable, one per node)."`
	ExporterTokenFile     string            `name:"exporter-token-file" group:"Wiring" help:"File with the exporters' API token (else env JOULEMARK_API_TOKEN)."`
	ExporterGPUs          []string          `name:"exporter.gpus" group:"Wiring" help:"Measure only these GPU UUIDs (comma-separated or repeated): the engine's GPUs. Default: every GPU of the exporters."`
	EnginePod             string            `name:"engine.pod" group:"Wiring" help:"Measure only the GPUs the kubelet lists for this pod (namespace/name), resolved by the exporter."`
	APIKeyFile            string            `name:"api-key-file" group:"Wiring" help:"File with the engine's API key (else env OPENAI_API_KEY)."`
	RemoteWriteURL        string            `name:"remote-write-url" group:"Wiring" help:"Prometheus remote-write URL for per-request samples."`
	RemoteWriteBearerFile string            `name:"remote-write-bearer-token-file" group:"Wiring" help:"Remote write: bearer token file."`
	RemoteWriteUser       string            `name:"remote-write-basic-user" group:"Wiring" help:"Remote write: basic auth user."`
	RemoteWritePassFile   string            `name:"remote-write-basic-password-file" group:"Wiring" help:"Remote write: basic auth password file."`
	RemoteWriteCAFile     string            `name:"remote-write-ca-file" group:"Wiring" help:"Remote write: CA file."`
	RemoteWriteCertFile   string            `name:"remote-write-cert-file" group:"Wiring" help:"Remote write: client certificate file."`
	RemoteWriteKeyFile    string            `name:"remote-write-key-file" group:"Wiring" help:"Remote write: client key file."`
	RemoteWriteInsecure   bool              `name:"remote-write-insecure-skip-verify" group:"Wiring" help:"Remote write: skip TLS verification."`
	RemoteWriteHeader     map[string]string `name:"remote-write-header" group:"Wiring" help:"Remote write: extra header, e.g. X-Scope-OrgID=tenant (repeatable)."`
	EngineMetrics         bool              `name:"engine-metrics" group:"Wiring" help:"Record the engine's own /metrics (queue, KV cache, preemptions) with the run."`
	EngineMetricsURL      string            `name:"engine-metrics-url" group:"Wiring" help:"Engine metrics URL (default: the target's root + /metrics)."`

	RunsDir string `name:"runs-dir" default:"runs" group:"Archive" help:"Where run archives go."`
	RunID   string `name:"run-id" group:"Archive" help:"Run id (generated when absent; an existing one is refused)."`

	set []string
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

// Run builds the configs, then runs them one after the other.
func (c *BenchCmd) Run(g *Globals) error {
	var cfgs []benchjob.Config
	if c.Config != "" {
		if len(c.set) > 0 {
			return fmt.Errorf("--config replaces the config flags: drop --%s (use --set path=value)", strings.Join(c.set, ", --"))
		}
		runs, err := experiment.LoadBench(c.Config, c.Set)
		if err != nil {
			return err
		}
		if c.DryRun {
			return experiment.WriteDryRun(os.Stdout, runs, true)
		}
		for _, r := range runs {
			cfgs = append(cfgs, r.Config)
		}
	} else {
		if len(c.Set) > 0 || c.DryRun {
			return errors.New("--set and --dry-run go with --config")
		}
		// Validated once, by benchjob.Sweep, before anything starts.
		cfgs = append(cfgs, c.config())
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		stop() // a second Ctrl-C kills at once
	}()
	var errs []error
	for _, cfg := range cfgs {
		if ctx.Err() != nil {
			break
		}
		results, err := benchjob.Sweep(ctx, cfg, benchjob.Options{Logger: g.Logger()})
		for _, res := range results {
			fmt.Println()
			if werr := benchjob.WriteSummary(os.Stdout, res); werr != nil {
				errs = append(errs, werr)
			}
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (c *BenchCmd) config() benchjob.Config {
	cfg := benchjob.Defaults()
	cfg.Target, cfg.Model, cfg.Endpoint = c.Target, c.Model, c.Endpoint
	cfg.Concurrency, cfg.Rate, cfg.Burstiness, cfg.MaxConcurrency = c.Concurrency, c.Rate, c.Burstiness, c.MaxConcurrency
	cfg.SweepConcurrency, cfg.SweepRate = c.SweepConcurrency, c.SweepRate
	cfg.Requests, cfg.Duration, cfg.WarmupRequests, cfg.IdleDuration, cfg.MaxLag = c.Requests, c.Duration, c.WarmupRequests, c.IdleDuration, c.MaxLag
	cfg.Workload = benchjob.Workload{
		MeanInputTokens: c.MeanInputTokens, StddevInputTokens: c.StddevInputTokens,
		MeanOutputTokens: c.MeanOutputTokens, StddevOutputTokens: c.StddevOutputTokens,
		Dataset: c.Dataset, Trace: c.Trace, Seed: c.Seed, Kind: c.Workload, QualityFile: c.QualityFile,
	}
	if c.IgnoreEOS {
		t := true
		cfg.Extras.IgnoreEOS = &t
	}
	cfg.Extras.MinTokens, cfg.Extras.Temperature, cfg.Extras.Seed, cfg.Extras.MaxTokens = c.MinTokens, c.Temperature, c.SamplingSeed, c.MaxTokens
	if c.Thinking != "default" {
		on := c.Thinking == "on"
		cfg.Extras.EnableThinking = &on
	}
	cfg.RequireUsage = c.RequireUsage
	cfg.Timeouts = benchjob.Timeouts{Connect: c.ConnectTimeout, FirstToken: c.FirstTokenTimeout, Total: c.RequestTimeout}
	cfg.Engine = benchjob.EngineConfig{
		Cmd: c.EngineCmd, Start: c.EngineStart, Stop: c.EngineStop, NoLifecycle: c.NoLifecycle,
		ReadyTimeout: c.ReadyTimeout, StopGrace: c.StopGrace, ReleaseWait: c.ReleaseWait,
		Version: c.EngineVersion, Image: c.EngineImage, ModelRevision: c.ModelRevision,
	}
	cfg.Exporters, cfg.ExporterTokenFile, cfg.APIKeyFile = c.Exporter, c.ExporterTokenFile, c.APIKeyFile
	cfg.ExporterGPUs, cfg.EnginePod = c.ExporterGPUs, c.EnginePod
	cfg.RemoteWrite.URL = c.RemoteWriteURL
	h := config.DefaultHTTPClientConfig
	if c.RemoteWriteBearerFile != "" {
		h.Authorization = &config.Authorization{Type: "Bearer", CredentialsFile: c.RemoteWriteBearerFile}
	}
	if c.RemoteWriteUser != "" || c.RemoteWritePassFile != "" {
		h.BasicAuth = &config.BasicAuth{Username: c.RemoteWriteUser, PasswordFile: c.RemoteWritePassFile}
	}
	h.TLSConfig = config.TLSConfig{CAFile: c.RemoteWriteCAFile, CertFile: c.RemoteWriteCertFile, KeyFile: c.RemoteWriteKeyFile,
		InsecureSkipVerify: c.RemoteWriteInsecure}
	if len(c.RemoteWriteHeader) > 0 {
		h.HTTPHeaders = &config.Headers{Headers: map[string]config.Header{}}
		for k, v := range c.RemoteWriteHeader {
			h.HTTPHeaders.Headers[k] = config.Header{Values: []string{v}}
		}
	}
	cfg.RemoteWrite.HTTP = h
	cfg.EngineMetrics, cfg.EngineMetricsURL = c.EngineMetrics, c.EngineMetricsURL
	cfg.RunsDir, cfg.RunID = c.RunsDir, c.RunID
	return cfg
}
