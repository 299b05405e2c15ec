package main

import (
	"context"
	"os"
	"strconv"
	"time"

	"github.com/alecthomas/kong"

	"github.com/joulemark/joulemark/demo"
	"github.com/joulemark/joulemark/report"
)

// DemoCmd runs the whole pipeline on the embedded default. Its flag
// defaults are demo.Defaults' (demoDefaults); a lifecycle timing not given
// takes the preset, the two-minute demo or, with --method-timings, the
// method's full timings; a timing given is used as given (0 is refused by
// demo.Config.Validate). Settings that are bench's have bench's names.
type DemoCmd struct {
	RunsDir       string `name:"runs-dir" default:"${demo_runs_dir}" help:"Directory of the runs (each demo run in <runs-dir>/<run_id>/, never overwritten)."`
	RunID         string `name:"run-id" type:"runid" help:"Run id (default: a fresh one)."`
	PrometheusURL string `name:"prometheus.url" placeholder:"URL" help:"Use this Prometheus instead of the embedded one; it must accept remote write (--web.enable-remote-write-receiver)."`
	ListenAddress string `name:"web.listen-address" default:"${demo_listen_address}" help:"Address of the embedded Prometheus' HTTP API (point curl or Grafana at it)."`
	KeepServing   bool   `name:"keep-serving" help:"Keep the embedded Prometheus serving after the report, until Ctrl-C."`

	MethodTimings  bool          `name:"method-timings" help:"The method's full timings (1m idle, 2m weight loading, 10m formal, release held 30s) instead of the two-minute demo."`
	GPUs           int           `name:"gpus" default:"${demo_gpus}" help:"Simulated GPUs."`
	SampleInterval time.Duration `name:"sample.interval" hidden:"" default:"${demo_sample_interval}" help:"Exporter's sampling period."`
	ScrapeInterval time.Duration `name:"scrape.interval" hidden:"" default:"${demo_scrape_interval}" help:"Prometheus' scrape period of the exporter and the engine."`

	Idle           *time.Duration `name:"idle-duration" help:"Idle baseline length (default 10s; 1m with --method-timings)."`
	StartupDelay   *time.Duration `name:"startup-delay" help:"Simulated weight loading time (default 10s; 2m with --method-timings)."`
	WarmupRequests int            `name:"warmup-requests" default:"${demo_warmup_requests}" help:"Warm-up requests."`
	Formal         *time.Duration `name:"duration" help:"Formal phase length (default 60s; 10m with --method-timings)."`
	FormalRequests int            `name:"requests" help:"Formal requests at most (0: bounded by --duration only)."`
	ReleaseHold    *time.Duration `name:"release.hold" help:"Time power must hold within ±5% of the idle baseline (default 10s; 30s with --method-timings)."`
	ReleaseMaxWait *time.Duration `name:"release.max-wait" help:"Release wait past which the run is flagged release not closed (default 2m; 10m with --method-timings)."`

	Concurrency  int           `default:"${demo_concurrency}" help:"Concurrent requests (closed loop)."`
	InputTokens  int           `name:"workload.mean-input-tokens" default:"${demo_input_tokens}" help:"Mean prompt length in tokens."`
	OutputTokens int           `name:"workload.mean-output-tokens" default:"${demo_output_tokens}" help:"Mean completion length in tokens (ignore_eos)."`
	OutputStddev int           `name:"workload.stddev-output-tokens" hidden:"" default:"${demo_output_stddev}" help:"Standard deviation of completion lengths."`
	Trace        string        `name:"workload.trace" placeholder:"FILE" help:"Replay this trace (JSONL lines of time, input_tokens, output_tokens: bench's workload.trace) as the formal load, an open loop, instead of the closed loop of --concurrency."`
	Cost         demoCostFlags `embed:"" prefix:"cost." group:"Cost and carbon"`
	MaxBatch     int           `name:"max-num-seqs" hidden:"" default:"${demo_max_num_seqs}" help:"Simulated engine's maximum batch."`
	Scenario     string        `default:"healthy" enum:"healthy,queueing,kv-evictions,slow-prefill,client-bound" help:"Situation to simulate, one per diagnosis rule (healthy, queueing, kv-evictions, slow-prefill, client-bound); applied after the other flags."`
	KVCache      int           `name:"kv-cache-tokens" hidden:"" default:"${demo_kv_cache_tokens}" help:"Simulated engine's KV cache capacity in tokens (blocks of 16; preempts when full)."`
	Prefill      time.Duration `name:"prefill-per-token" hidden:"" default:"${demo_prefill_per_token}" help:"Simulated engine's prefill time per prompt token."`
	Frontend     time.Duration `name:"frontend-delay" hidden:"" default:"${demo_frontend_delay}" help:"Delay every request spends in front of the simulated engine (a router, a proxy) before its scheduler sees it."`
	Dialect      string        `hidden:"" default:"${demo_dialect}" enum:"vllm,sglang" help:"Metric names the simulated engine speaks (vllm or sglang)."`
	Seed         uint64        `hidden:"" default:"${demo_seed}" help:"Seed of the simulated engine and GPUs."`
	Faults       FaultFlags    `embed:"" prefix:"fault."`

	SLOTTFT   time.Duration `name:"slo.ttft" default:"${analyze_slo_ttft}" help:"TTFT SLO for goodput (0 disables)."`
	SLOTPOT   time.Duration `name:"slo.tpot" default:"${analyze_slo_tpot}" help:"TPOT SLO for goodput (0 disables)."`
	SSWindow  int           `name:"steady-state.window" hidden:"" default:"${analyze_ss_window}" help:"Steady state: requests per window."`
	SSWindows int           `name:"steady-state.windows" hidden:"" default:"${analyze_ss_windows}" help:"Steady state: consecutive non-overlapping windows."`
	SSCV      float64       `name:"steady-state.cv" hidden:"" default:"${analyze_ss_cv}" help:"Steady state: CV threshold of every window."`
	SSWeight  string        `name:"steady-state.weighting" hidden:"" default:"${analyze_ss_weighting}" enum:"tokens,requests" help:"Steady state: how a request counts in a window's CV (tokens or requests)."`
}

// demoDefaults are the demo flags' defaults as kong variables, taken from
// demo.Defaults (its analysis parameters are analyzeDefaults').
func demoDefaults() kong.Vars {
	d := demo.Defaults()
	return kong.Vars{
		"demo_runs_dir":          d.Dir,
		"demo_listen_address":    d.ListenAddress,
		"demo_gpus":              strconv.Itoa(d.GPUs),
		"demo_sample_interval":   d.SampleInterval.String(),
		"demo_scrape_interval":   d.ScrapeInterval.String(),
		"demo_warmup_requests":   strconv.Itoa(d.WarmupRequests),
		"demo_concurrency":       strconv.Itoa(d.Concurrency),
		"demo_input_tokens":      strconv.Itoa(d.InputTokens),
		"demo_output_tokens":     strconv.Itoa(d.OutputTokens),
		"demo_output_stddev":     strconv.Itoa(d.OutputStddev),
		"demo_max_num_seqs":      strconv.Itoa(d.Engine.MaxBatch),
		"demo_kv_cache_tokens":   strconv.Itoa(d.Engine.KVCacheTokens),
		"demo_prefill_per_token": d.Engine.PrefillPerToken.String(),
		"demo_frontend_delay":    d.Engine.FrontendDelay.String(),
		"demo_dialect":           d.Engine.Dialect,
		"demo_seed":              strconv.FormatUint(d.Engine.Seed, 10),
	}
}

// Config is the demo configuration the flags give.
func (c *DemoCmd) Config() (demo.Config, error) {
	cfg := demo.Defaults()
	if c.MethodTimings {
		cfg = demo.MethodTimings()
	}
	set := func(dst *time.Duration, v *time.Duration) {
		if v != nil {
			*dst = *v
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
	cfg.Cost = report.CostInputs{PricePerKWh: c.Cost.PricePerKWh, Currency: c.Cost.Currency,
		CarbonIntensity: c.Cost.CarbonIntensity, PUE: c.Cost.PUE}
	cfg.Engine.Faults = c.Faults.faults()
	cfg.Params.SLOTTFT, cfg.Params.SLOTPOT = c.SLOTTFT, c.SLOTPOT
	cfg.Params.SSWindow, cfg.Params.SSWindows, cfg.Params.SSCV, cfg.Params.SSWeighting = c.SSWindow, c.SSWindows, c.SSCV, c.SSWeight
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

// demoCostFlags are the cost inputs the demo prices its report and
// production view with and defines in its Prometheus (the fleet
// dashboard's cost row): analyze's --cost.* without the live carbon query
// and the host energy basis, which the simulated node cannot feed.
type demoCostFlags struct {
	PricePerKWh     *float64 `name:"price-per-kwh" placeholder:"PRICE" help:"Energy price per kWh (in --cost.currency): adds cost figures."`
	Currency        string   `name:"currency" hidden:"" placeholder:"CODE" help:"Currency of --cost.price-per-kwh, a label (e.g. EUR)."`
	CarbonIntensity *float64 `name:"carbon-intensity" placeholder:"G_PER_KWH" help:"Grid carbon intensity, gCO2e per kWh: adds emission figures."`
	PUE             *float64 `name:"pue" placeholder:"RATIO" help:"Facility power usage effectiveness (≥ 1), applied to the energy counted; required for any cost or emission figure."`
}
