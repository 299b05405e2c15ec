// Package demo runs joulemark's whole pipeline in one process with nothing
// installed: simulated GPUs behind an in-process exporter, a simulated engine
// whose load drives those GPUs, an embedded Prometheus (or an external one),
// a benchmark run through the full lifecycle, the analysis and the report.
// cmd/joulemark's `demo` command is a thin wrapper around Run.
package demo

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"time"

	"github.com/joulemark/joulemark/analyze"
	"github.com/joulemark/joulemark/benchjob"
	"github.com/joulemark/joulemark/internal/contract"
	"github.com/joulemark/joulemark/internal/gpu"
	"github.com/joulemark/joulemark/internal/secretfile"
	"github.com/joulemark/joulemark/internal/simengine"
	"github.com/joulemark/joulemark/report"
)

// Config is one demo run. Defaults gives about two minutes end to end;
// MethodTimings the Benchmark 1.5 method's full timings. It is the demo
// command's flag model (kong tags; its defaults are Defaults'): a field
// tagged kong:"-" has no flag (the lifecycle timings are Timings').
type Config struct {
	// Dir is the runs directory: the run's archive is Dir/<run_id>/, an
	// ordinary bench archive (runarchive) with tsdb/, report/ and
	// dashboards/ inside. A run directory is never overwritten.
	Dir   string `name:"runs-dir" help:"Directory of the runs (each demo run in <runs-dir>/<run_id>/, never overwritten)."`
	RunID string `name:"run-id" type:"runid" help:"Run id (default: a fresh one)."` // empty: a fresh one (contract.NewRunID)

	// PrometheusURL, when set, uses that Prometheus instead of the embedded
	// one: every sample (exporter, engine, per-request) reaches it by remote
	// write, so it needs --web.enable-remote-write-receiver.
	PrometheusURL string `name:"prometheus.url" placeholder:"URL" help:"Use this Prometheus instead of the embedded one; it must accept remote write (--web.enable-remote-write-receiver)."`
	// ListenAddress of the embedded Prometheus' HTTP API.
	ListenAddress string `name:"web.listen-address" help:"Address of the embedded Prometheus' HTTP API (point curl or Grafana at it)."`
	// KeepServing keeps the embedded Prometheus up after the report until
	// the context ends (for curl or a local Grafana).
	KeepServing bool `name:"keep-serving" help:"Keep the embedded Prometheus serving after the report, until Ctrl-C."`

	GPUs int `name:"gpus" help:"Simulated GPUs."`
	// SampleInterval is the exporter's fast sampling (and raw remote
	// write), ScrapeInterval Prometheus' scrape of the exporter and the
	// engine.
	SampleInterval time.Duration `kong:"-"`
	ScrapeInterval time.Duration `kong:"-"`

	// Lifecycle timings (their flags are Timings').
	Idle           time.Duration `kong:"-"` // idle baseline
	WarmupRequests int           `name:"warmup-requests" help:"Warm-up requests."`
	Formal         time.Duration `kong:"-"`                                                                        // formal phase length
	FormalRequests int           `name:"requests" help:"Formal requests at most (0: bounded by --duration only)."` // 0: bounded by Formal only
	ReleaseHold    time.Duration `kong:"-"`                                                                        // how long power must stay within ±5% of baseline
	ReleaseMaxWait time.Duration `kong:"-"`                                                                        // past it the release is flagged not closed

	// Load and workload.
	Concurrency  int `name:"concurrency" help:"Concurrent requests (closed loop)."`
	InputTokens  int `name:"workload.mean-input-tokens" help:"Mean prompt length in tokens."`                   // mean prompt length
	OutputTokens int `name:"workload.mean-output-tokens" help:"Mean completion length in tokens (ignore_eos)."` // mean completion length (ignore_eos)
	// OutputStddev spreads completion lengths, so the closed loop's requests
	// do not start and end in lockstep.
	OutputStddev int `kong:"-"`
	// NaturalStops sends no ignore_eos: the engine ends each completion at
	// its end-of-sequence (simengine.Config.EOSMeanTokens) or max_tokens,
	// as real engines do, instead of at the drawn length.
	NaturalStops bool `kong:"-"`
	// Workload, when set, is the bench's workload as given (its seed too)
	// instead of the one InputTokens, OutputTokens and OutputStddev shape.
	Workload *benchjob.Workload `kong:"-"`
	// Trace, when set, is a trace file (the bench's workload.trace: JSONL
	// of arrival time, input and output tokens) replayed as the formal
	// load, an open loop, instead of the closed loop of Concurrency; the
	// warm-up stays synthetic.
	Trace string `name:"workload.trace" placeholder:"FILE" help:"Replay this trace (JSONL lines of time, input_tokens, output_tokens: bench's workload.trace) as the formal load, an open loop, instead of the closed loop of --concurrency."`

	// Scenario is the situation ApplyScenario shaped the engine into
	// ("" or healthy: none); the run's scenario label names it.
	Scenario string `name:"scenario" default:"healthy" enum:"healthy,queueing,kv-evictions,slow-prefill,client-bound" help:"Situation to simulate, one per diagnosis rule (healthy, queueing, kv-evictions, slow-prefill, client-bound); applied after the other flags."`

	// Cost, when any input is set, prices the report and the production
	// view, and the embedded Prometheus gets the cost input gauges as
	// constant recording rules (the fleet dashboard's cost row).
	Cost report.CostInputs `kong:"-"`

	Engine simengine.Config `kong:"-"`
	Sim    gpu.SimConfig    `kong:"-"`
	Params analyze.Params   `kong:"-"`

	// Out receives the summary table and the locations (default io.Discard).
	Out    io.Writer    `kong:"-"`
	Logger *slog.Logger `kong:"-"`
	// Progress is where the benchmark's progress goes (nil: log lines).
	Progress io.Writer `kong:"-"`

	// shapeLoad, when set, rewrites the load the engine reports to the GPUs
	// (tests make the power unsteady with it).
	shapeLoad func(elapsed time.Duration, load float64) float64
}

// Defaults is the two-minute demo: 8 GPUs, a 70B-class simulated engine at
// 24 concurrent requests, 10 s idle, 10 s weight loading, 60 s formal,
// release held 10 s.
func Defaults() Config {
	e := simengine.DefaultConfig()
	e.MaxBatch = 32
	// 64k tokens of KV cache: the default load fills a fifth of it.
	e.KVCacheTokens = 1 << 16
	e.StartupDelay = 10 * time.Second
	e.ShutdownDelay = 2 * time.Second
	return Config{
		Dir:            "runs",
		ListenAddress:  "127.0.0.1:0",
		GPUs:           8,
		Scenario:       ScenarioHealthy,
		SampleInterval: 100 * time.Millisecond,
		ScrapeInterval: time.Second,
		Idle:           10 * time.Second,
		WarmupRequests: 24,
		Formal:         60 * time.Second,
		ReleaseHold:    10 * time.Second,
		ReleaseMaxWait: 2 * time.Minute,
		Concurrency:    24,
		InputTokens:    400,
		OutputTokens:   150,
		OutputStddev:   30,
		Engine:         e,
		Sim: gpu.SimConfig{
			IdleWatts: e.Power.IdleWatts, MaxWatts: e.Power.MaxWatts, StartupWatts: 250,
			RampSeconds: 1.5, DecayTau: 2, NoiseWatts: 0.5, Seed: 1,
		},
		Params: analyze.DefaultParams(),
	}
}

// MethodTimings is Defaults with the method's full timings: a 60 s idle
// baseline, weight loading of a real 70B model (about 2 minutes), a 10-minute
// formal phase, release held 30 s within a 10-minute maximum wait and the
// release decay of real GPUs.
func MethodTimings() Config {
	c := Defaults()
	methodTimings(&c)
	return c
}

// methodTimings sets the method's full timings on c (MethodTimings).
func methodTimings(c *Config) {
	c.Idle = time.Minute
	c.Engine.StartupDelay = 2 * time.Minute
	c.Engine.ShutdownDelay = 5 * time.Second
	c.Formal = 10 * time.Minute
	c.ReleaseHold = 30 * time.Second
	c.ReleaseMaxWait = 10 * time.Minute
	c.Sim.DecayTau = 8
}

// Timings are the demo command's lifecycle timings (kong tags): a preset,
// Defaults' two-minute demo or with MethodTimings the method's full
// timings, and the timings given over it. A nil timing takes the preset's;
// a timing given is used as given (0 is refused by Config.Validate).
type Timings struct {
	MethodTimings  bool           `name:"method-timings" help:"The method's full timings (1m idle, 2m weight loading, 10m formal, release held 30s) instead of the two-minute demo."`
	Idle           *time.Duration `name:"idle-duration" help:"Idle baseline length (default: the preset's, 10s; 1m with --method-timings)."`
	StartupDelay   *time.Duration `name:"startup-delay" help:"Simulated weight loading time (default: the preset's, 10s; 2m with --method-timings)."`
	Formal         *time.Duration `name:"duration" help:"Formal phase length (default: the preset's, 1m; 10m with --method-timings)."`
	ReleaseHold    *time.Duration `name:"release.hold" help:"Time power must hold within ±5% of the idle baseline (default: the preset's, 10s; 30s with --method-timings)."`
	ReleaseMaxWait *time.Duration `name:"release.max-wait" help:"Release wait past which the run is flagged release not closed (default: the preset's, 2m; 10m with --method-timings)."`
}

// Apply sets c's lifecycle timings: the preset's (c's own, or the
// method's with MethodTimings), then those given.
func (t Timings) Apply(c *Config) {
	if t.MethodTimings {
		methodTimings(c)
	}
	for _, s := range []struct {
		dst *time.Duration
		v   *time.Duration
	}{{&c.Idle, t.Idle}, {&c.Engine.StartupDelay, t.StartupDelay}, {&c.Formal, t.Formal}, {&c.ReleaseHold, t.ReleaseHold}, {&c.ReleaseMaxWait, t.ReleaseMaxWait}} {
		if s.v != nil {
			*s.dst = *s.v
		}
	}
}

// Validate checks the configuration before anything starts.
func (c *Config) Validate() error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if c.Dir == "" {
		bad("dir: empty")
	}
	if c.RunID != "" {
		if err := contract.ValidateRunID(c.RunID); err != nil {
			bad("%w", err)
		}
	}
	if err := c.Cost.Validate(); err != nil {
		bad("cost: %w", err)
	}
	if c.PrometheusURL != "" {
		if u, err := url.Parse(c.PrometheusURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			bad("prometheus url %q: want http(s)://host:port", secretfile.RedactURL(c.PrometheusURL))
		}
		if c.KeepServing {
			bad("keep serving: only with the embedded Prometheus")
		}
	}
	if c.GPUs < 1 || c.GPUs > 1024 {
		bad("gpus: %d, want 1..1024", c.GPUs)
	}
	if c.SampleInterval < 10*time.Millisecond {
		bad("sample interval: %s, want >= 10ms", c.SampleInterval)
	}
	if c.ScrapeInterval < c.SampleInterval {
		bad("scrape interval: %s, want >= the sample interval %s", c.ScrapeInterval, c.SampleInterval)
	}
	if c.Idle <= 0 {
		bad("idle: %s, want > 0", c.Idle)
	}
	if c.WarmupRequests < 0 {
		bad("warmup requests: %d, want >= 0", c.WarmupRequests)
	}
	if c.Formal <= 0 {
		bad("formal: %s, want > 0", c.Formal)
	}
	if c.FormalRequests < 0 {
		bad("formal requests: %d, want >= 0", c.FormalRequests)
	}
	if c.ReleaseHold <= 0 || c.ReleaseMaxWait <= c.ReleaseHold {
		bad("release hold %s and max wait %s: want 0 < hold < max wait", c.ReleaseHold, c.ReleaseMaxWait)
	}
	if c.Concurrency < 1 {
		bad("concurrency: %d, want >= 1", c.Concurrency)
	}
	if c.InputTokens < 1 || c.OutputTokens < 1 {
		bad("input tokens %d, output tokens %d: want >= 1", c.InputTokens, c.OutputTokens)
	}
	if c.OutputStddev < 0 || c.OutputStddev > c.OutputTokens {
		bad("output stddev %d: want 0..output tokens %d", c.OutputStddev, c.OutputTokens)
	}
	if p := c.Engine.Power; p.IdleWatts != c.Sim.IdleWatts || p.MaxWatts != c.Sim.MaxWatts {
		bad("engine power model: idle %g W, max %g W; the simulated GPUs': idle %g W, max %g W: want the same", p.IdleWatts, p.MaxWatts, c.Sim.IdleWatts, c.Sim.MaxWatts)
	}
	if err := c.Engine.Validate(); err != nil {
		bad("engine: %w", err)
	}
	if err := c.Params.Validate(); err != nil {
		bad("analysis: %w", err)
	}
	return errors.Join(errs...)
}
