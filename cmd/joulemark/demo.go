package main

import (
	"context"
	"os"
	"time"

	"github.com/joulemark/joulemark/internal/demo"
)

// DemoCmd runs the whole pipeline on the embedded default. Timing flags left
// at 0 take the preset: the two-minute demo, or the method's full timings
// with --method-timings.
type DemoCmd struct {
	RunsDir       string `name:"runs-dir" default:"runs" help:"Directory of the runs (each demo run in <runs-dir>/<run_id>/, never overwritten)."`
	RunID         string `name:"run-id" type:"runid" help:"Run id (default: a fresh one)."`
	PrometheusURL string `name:"prometheus.url" placeholder:"URL" help:"Use this Prometheus instead of the embedded one; it must accept remote write (--web.enable-remote-write-receiver)."`
	ListenAddress string `name:"web.listen-address" default:"127.0.0.1:0" help:"Address of the embedded Prometheus' HTTP API (point curl or Grafana at it)."`
	KeepServing   bool   `name:"keep-serving" help:"Keep the embedded Prometheus serving after the report, until Ctrl-C."`

	MethodTimings  bool          `name:"method-timings" help:"The method's full timings (1m idle, 2m weight loading, 10m formal, release held 30s) instead of the two-minute demo."`
	GPUs           int           `name:"gpus" default:"8" help:"Simulated GPUs."`
	SampleInterval time.Duration `name:"sample.interval" default:"100ms" help:"Exporter's sampling period."`
	ScrapeInterval time.Duration `name:"scrape.interval" default:"1s" help:"Prometheus' scrape period of the exporter and the engine."`

	Idle           time.Duration `name:"idle.duration" help:"Idle baseline length (10s; 1m with --method-timings)."`
	StartupDelay   time.Duration `name:"startup-delay" help:"Simulated weight loading time (10s; 2m with --method-timings)."`
	WarmupRequests int           `name:"warmup.requests" default:"24" help:"Warm-up requests."`
	Formal         time.Duration `name:"formal.duration" help:"Formal phase length (60s; 10m with --method-timings)."`
	FormalRequests int           `name:"formal.requests" help:"Formal requests at most (0: bounded by --formal.duration only)."`
	ReleaseHold    time.Duration `name:"release.hold" help:"Time power must hold within ±5% of the idle baseline (10s; 30s with --method-timings)."`
	ReleaseMaxWait time.Duration `name:"release.max-wait" help:"Release wait past which the run is flagged release not closed (2m; 10m with --method-timings)."`

	Concurrency  int           `default:"24" help:"Concurrent requests (closed loop)."`
	InputTokens  int           `name:"mean-input-tokens" default:"400" help:"Mean prompt length in tokens."`
	OutputTokens int           `name:"mean-output-tokens" default:"150" help:"Mean completion length in tokens (ignore_eos)."`
	OutputStddev int           `name:"stddev-output-tokens" default:"30" help:"Standard deviation of completion lengths."`
	Trace        string        `name:"trace" placeholder:"FILE" help:"Replay this trace (JSONL lines of time, input_tokens, output_tokens: bench's workload.trace) as the formal load, an open loop, instead of the closed loop of --concurrency."`
	MaxBatch     int           `name:"max-num-seqs" default:"32" help:"Simulated engine's maximum batch."`
	Scenario     string        `default:"healthy" enum:"healthy,queueing,kv-evictions,slow-prefill,client-bound" help:"Situation to simulate, one per diagnosis rule (healthy, queueing, kv-evictions, slow-prefill, client-bound); applied after the other flags."`
	KVCache      int           `name:"kv-cache-tokens" default:"65536" help:"Simulated engine's KV cache capacity in tokens (blocks of 16; preempts when full)."`
	Prefill      time.Duration `name:"prefill-per-token" default:"50us" help:"Simulated engine's prefill time per prompt token."`
	Frontend     time.Duration `name:"frontend-delay" default:"0s" help:"Delay every request spends in front of the simulated engine (a router, a proxy) before its scheduler sees it."`
	Dialect      string        `default:"vllm" enum:"vllm,sglang" help:"Metric names the simulated engine speaks (vllm or sglang)."`
	Seed         uint64        `default:"1" help:"Seed of the simulated engine and GPUs."`
	Faults       FaultFlags    `embed:"" prefix:"fault."`

	SLOTTFT   time.Duration `name:"slo.ttft" default:"500ms" help:"TTFT SLO for goodput (0 disables)."`
	SLOTPOT   time.Duration `name:"slo.tpot" default:"50ms" help:"TPOT SLO for goodput (0 disables)."`
	SSWindow  int           `name:"steady-state.window" default:"100" help:"Steady state: requests per window."`
	SSWindows int           `name:"steady-state.windows" default:"3" help:"Steady state: consecutive non-overlapping windows."`
	SSCV      float64       `name:"steady-state.cv" default:"0.03" help:"Steady state: CV threshold of every window."`
}

// Config is the demo configuration the flags give.
func (c *DemoCmd) Config() (demo.Config, error) {
	cfg := demo.Defaults()
	if c.MethodTimings {
		cfg = demo.MethodTimings()
	}
	set := func(dst *time.Duration, v time.Duration) {
		if v != 0 {
			*dst = v
		}
	}
	set(&cfg.Idle, c.Idle)
	set(&cfg.Engine.StartupDelay, c.StartupDelay)
	set(&cfg.Formal, c.Formal)
	set(&cfg.ReleaseHold, c.ReleaseHold)
	set(&cfg.ReleaseMaxWait, c.ReleaseMaxWait)
	cfg.Dir, cfg.RunID, cfg.PrometheusURL = c.RunsDir, c.RunID, c.PrometheusURL
	cfg.ListenAddress, cfg.KeepServing = c.ListenAddress, c.KeepServing
	cfg.GPUs, cfg.WarmupRequests, cfg.FormalRequests = c.GPUs, c.WarmupRequests, c.FormalRequests
	cfg.SampleInterval, cfg.ScrapeInterval = c.SampleInterval, c.ScrapeInterval
	cfg.Concurrency, cfg.InputTokens, cfg.OutputTokens, cfg.OutputStddev = c.Concurrency, c.InputTokens, c.OutputTokens, c.OutputStddev
	cfg.Engine.MaxBatch, cfg.Engine.Seed, cfg.Sim.Seed = c.MaxBatch, c.Seed, c.Seed
	cfg.Engine.KVCacheTokens, cfg.Engine.PrefillPerToken, cfg.Engine.FrontendDelay = c.KVCache, c.Prefill, c.Frontend
	cfg.Engine.Dialect = c.Dialect
	cfg.Trace = c.Trace
	cfg.Engine.Faults = c.Faults.faults()
	cfg.Params.SLOTTFT, cfg.Params.SLOTPOT = c.SLOTTFT, c.SLOTPOT
	cfg.Params.SSWindow, cfg.Params.SSWindows, cfg.Params.SSCV = c.SSWindow, c.SSWindows, c.SSCV
	return cfg, demo.ApplyScenario(&cfg, c.Scenario)
}

// Run runs the demo until the report is written (or Ctrl-C).
func (c *DemoCmd) Run(ctx context.Context, g *Globals) error {
	cfg, err := c.Config()
	if err != nil {
		return err
	}
	cfg.Out = os.Stdout
	cfg.Logger = g.Logger()
	res, err := demo.Run(ctx, cfg)
	if err != nil && res != nil {
		g.Logger().Error("demo did not finish; what it wrote is kept", "dir", res.Dir)
	}
	return err
}
