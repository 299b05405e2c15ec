package main

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/joulemark/joulemark/internal/gpu"
	"github.com/joulemark/joulemark/internal/simengine"
)

// SimEngineCmd serves a simulated OpenAI-compatible engine. Defaults are
// simengine.DefaultConfig's.
type SimEngineCmd struct {
	ListenAddress string `name:"web.listen-address" default:":8000" help:"Address to serve the OpenAI API, /health and /metrics on."`

	Model           string        `default:"joulemark/sim-llm" help:"Served model id."`
	MaxModelLen     int           `name:"max-model-len" default:"8192" help:"Context length (prompt + completion tokens)."`
	MaxBatch        int           `name:"max-num-seqs" default:"256" help:"Most sequences in one batch."`
	KVCacheTokens   int           `name:"kv-cache-tokens" default:"1048576" help:"KV cache capacity in tokens; a sequence reserves prompt + completion tokens."`
	MaxBatchedTok   int           `name:"max-num-batched-tokens" default:"8192" help:"Token budget of one step (chunked prefill); 0 prefills whole prompts in one step."`
	PrefillPerToken time.Duration `name:"prefill-per-token" default:"50us" help:"Prefill time per prompt token."`
	DecodeBase      time.Duration `name:"decode-base" default:"15ms" help:"Fixed time of a decode step."`
	DecodePerSeq    time.Duration `name:"decode-per-seq" default:"100us" help:"Decode step time added per sequence in the batch."`
	EOSMeanTokens   float64       `name:"eos-mean-tokens" default:"256" help:"Mean completion length without ignore_eos (geometric); 0 always runs to max_tokens."`
	StartupDelay    time.Duration `name:"startup-delay" default:"20s" help:"Weight loading time (/health answers 503 until it passes)."`
	ShutdownDelay   time.Duration `name:"shutdown-delay" default:"3s" help:"Time to free the GPUs after SIGTERM."`
	Seed            uint64        `default:"1" help:"Seed of token text, completion lengths and faults."`
	Dialect         string        `default:"vllm" enum:"vllm,sglang" help:"Metric names /metrics speaks: vllm (vllm:num_requests_running, ...) or sglang (sglang:num_running_reqs, ...)."`
	FrontendDelay   time.Duration `name:"frontend-delay" default:"0s" help:"Delay every request spends in front of the scheduler (a router, a proxy): in the client's latency, not in the engine's metrics."`
	Power           SimPowerFlags `embed:"" prefix:"power."`

	// Faults inject failures (hidden flags); their defaults are
	// simengine.DefaultConfig's (newParser, defaultsFromTarget).
	Faults simengine.Faults `embed:"" prefix:"fault."`
}

// Config is the engine configuration the flags give.
func (c *SimEngineCmd) Config() simengine.Config {
	return simengine.Config{
		Model: c.Model, MaxModelLen: c.MaxModelLen, MaxBatch: c.MaxBatch, KVCacheTokens: c.KVCacheTokens, MaxNumBatchedTokens: c.MaxBatchedTok,
		PrefillPerToken: c.PrefillPerToken, DecodeBase: c.DecodeBase, DecodePerSeq: c.DecodePerSeq,
		EOSMeanTokens: c.EOSMeanTokens, StartupDelay: c.StartupDelay, ShutdownDelay: c.ShutdownDelay, Seed: c.Seed,
		Faults: c.Faults, Dialect: c.Dialect, FrontendDelay: c.FrontendDelay, Power: c.Power.model(),
		Memory: simengine.DefaultConfig().Memory,
	}
}

// SimPowerFlags are the simulated engine's power model (gpu.SimPower):
// what each of its GPUs draws per step.
type SimPowerFlags struct {
	IdleWatts    float64 `name:"idle-watts" default:"70" help:"The GPUs' idle power (the exporter's simulated GPUs' must be the same)."`
	MaxWatts     float64 `name:"max-watts" default:"700" help:"The GPUs' power at load 1 (the exporter's simulated GPUs' must be the same)."`
	ActiveWatts  float64 `name:"active-watts" default:"200" help:"Power above idle on each GPU while a step runs."`
	PrefillJoule float64 `name:"prefill-joules-per-token" default:"0.02" help:"Energy of one prompt token prefilled, on each GPU."`
	DecodeJoule  float64 `name:"decode-joules-per-token" default:"0.045" help:"Energy of one token decoded, on each GPU."`
}

func (f SimPowerFlags) model() gpu.SimPower {
	return gpu.SimPower{IdleWatts: f.IdleWatts, MaxWatts: f.MaxWatts, ActiveWatts: f.ActiveWatts,
		PrefillJoulesPerToken: f.PrefillJoule, DecodeJoulesPerToken: f.DecodeJoule}
}

// Run serves until SIGINT or SIGTERM.
func (c *SimEngineCmd) Run(ctx context.Context, g *Globals) error {
	e, err := simengine.New(c.Config())
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", c.ListenAddress)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", c.ListenAddress, err)
	}
	runtime := prometheus.NewRegistry()
	runtime.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return simengine.Serve(ctx, ln, e, runtime, g.Logger())
}
