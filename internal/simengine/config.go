// Package simengine is a simulated LLM inference engine: an OpenAI-compatible
// streaming server whose timing follows a continuous-batching model (prefill
// proportional to prompt tokens, a decode step that grows with batch size, a
// maximum batch, a queue, a KV cache in blocks with recompute preemption),
// with vLLM's or SGLang's /metrics names, a startup (weight loading) and a
// shutdown, and fault injection. Its steps' power (gpu.SimPower), state and
// memory drive simulated GPUs through LoadSink, so energy follows work.
package simengine

import (
	"errors"
	"fmt"
	"time"

	"github.com/joulemark/joulemark/internal/contract"
	"github.com/joulemark/joulemark/internal/gpu"
)

// Config is the engine's model and timing. Durations may be scaled down
// freely (tests use milliseconds); the zero value of a field means "use the
// default" only through DefaultConfig.
type Config struct {
	// Model is the served model id (/v1/models, the "model" request field).
	Model string
	// MaxModelLen is the context length: prompt + completion tokens.
	MaxModelLen int
	// MaxBatch is the most sequences in one batch (vLLM --max-num-seqs).
	MaxBatch int
	// KVCacheTokens is the KV cache capacity in tokens, in blocks of
	// KVBlockSize as vLLM's: a sequence is admitted when blocks for its
	// prompt are free and takes a block per KVBlockSize generated tokens;
	// when none is free the most recently admitted sequence is preempted
	// (its blocks freed, recomputed later).
	KVCacheTokens int

	// MaxNumBatchedTokens is the token budget of one step (vLLM
	// --max-num-batched-tokens, chunked prefill): one per decoding sequence,
	// the rest for prompt chunks in admission order, so a long prompt is
	// prefilled over several steps. 0 prefills whole prompts in one step.
	MaxNumBatchedTokens int
	// PrefillPerToken is the prefill time per prompt token processed in a
	// step.
	PrefillPerToken time.Duration
	// DecodeBase and DecodePerSeq give a step's decode time:
	// DecodeBase + DecodePerSeq × (sequences decoding in the step).
	DecodeBase   time.Duration
	DecodePerSeq time.Duration

	// EOSMeanTokens is the mean of the (geometric) completion length drawn for
	// requests without ignore_eos; 0 never stops early (max_tokens is reached).
	EOSMeanTokens float64

	// StartupDelay is the weight loading time: /health answers 503 and
	// requests are refused until it passes.
	StartupDelay time.Duration
	// ShutdownDelay is the time to free the GPUs after a stop.
	ShutdownDelay time.Duration

	// Seed makes token text, completion lengths and faults reproducible.
	Seed uint64

	Faults Faults

	// Dialect is whose metric names /metrics speaks: contract.EngineVLLM or
	// contract.EngineSGLang (SGLang calls preemptions retractions).
	Dialect string
	// Power is the power model the engine's steps draw on its GPUs.
	Power gpu.SimPower
	// Memory is what the engine keeps in each of its GPUs' memory.
	Memory gpu.SimMemory
	// FrontendDelay holds every request that long before it reaches the
	// scheduler (a router, a proxy, the network): it counts in the
	// client's latency, not in the engine's metrics.
	FrontendDelay time.Duration
}

// Faults are injected failures. Rates are per request, in [0, 1].
type Faults struct {
	// ErrorRate answers requests with HTTP 500 before any token.
	ErrorRate float64 `name:"error-rate" hidden:"" help:"Share of requests answered with HTTP 500."`
	// StallRate holds a sequence for StallDuration once, at a random token
	// (it keeps its batch slot and KV cache while stalled).
	StallRate     float64       `name:"stall-rate" hidden:"" help:"Share of requests stalled once mid-stream."`
	StallDuration time.Duration `name:"stall-duration" hidden:"" help:"Length of a stall."`
	// TruncateRate aborts the response at a random token: the connection is
	// cut with no finish_reason, usage or [DONE].
	TruncateRate float64 `name:"truncate-rate" hidden:"" help:"Share of responses cut mid-stream (no finish_reason, usage or [DONE])."`
	// SlowFirstTokenRate delays a sequence's prefill by SlowFirstTokenDelay
	// after admission, so its time to first token grows by that much.
	SlowFirstTokenRate  float64       `name:"slow-first-token-rate" hidden:"" help:"Share of requests whose first token is delayed."`
	SlowFirstTokenDelay time.Duration `name:"slow-first-token-delay" hidden:"" help:"Delay added to a slow first token."`
}

// DefaultConfig is a 70B-class model on 8 GPUs, roughly: 20k prompt
// tokens/s prefill, 15 ms + 0.1 ms per sequence decode steps, 256 sequences.
func DefaultConfig() Config {
	return Config{
		Model:               "joulemark/sim-llm",
		MaxModelLen:         8192,
		MaxBatch:            256,
		KVCacheTokens:       1 << 20,
		MaxNumBatchedTokens: 8192,
		PrefillPerToken:     50 * time.Microsecond,
		DecodeBase:          15 * time.Millisecond,
		DecodePerSeq:        100 * time.Microsecond,
		EOSMeanTokens:       256,
		StartupDelay:        20 * time.Second,
		ShutdownDelay:       3 * time.Second,
		Seed:                1,
		// Fault durations apply once a rate is set.
		Faults:  Faults{StallDuration: 2 * time.Second, SlowFirstTokenDelay: 2 * time.Second},
		Dialect: contract.EngineVLLM,
		Power:   gpu.DefaultSimPower(),
		// 70B in bf16 over 4 GPUs, and the KV cache pool vLLM's
		// --gpu-memory-utilization 0.9 leaves of 80 GB.
		Memory: gpu.SimMemory{WeightsBytes: 35 << 30, KVCacheBytes: 37 << 30},
	}
}

// Validate checks the configuration and names the first bad field.
func (c Config) Validate() error {
	var errs []error
	if c.Model == "" {
		errs = append(errs, errors.New("model: empty"))
	}
	if c.MaxModelLen < 2 {
		errs = append(errs, fmt.Errorf("max model len: %d, want >= 2", c.MaxModelLen))
	}
	if c.MaxBatch < 1 {
		errs = append(errs, fmt.Errorf("max batch: %d, want >= 1", c.MaxBatch))
	}
	if c.MaxNumBatchedTokens != 0 && c.MaxNumBatchedTokens <= c.MaxBatch {
		errs = append(errs, fmt.Errorf("max num batched tokens: %d, want 0 (no chunking) or more than max batch %d", c.MaxNumBatchedTokens, c.MaxBatch))
	}
	if c.KVCacheTokens < c.MaxModelLen {
		errs = append(errs, fmt.Errorf("kv cache tokens: %d, want >= max model len %d", c.KVCacheTokens, c.MaxModelLen))
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{
		{"prefill per token", c.PrefillPerToken}, {"decode base", c.DecodeBase},
		{"decode per seq", c.DecodePerSeq}, {"startup delay", c.StartupDelay},
		{"shutdown delay", c.ShutdownDelay}, {"stall duration", c.Faults.StallDuration},
		{"slow first token delay", c.Faults.SlowFirstTokenDelay},
	} {
		if d.v < 0 {
			errs = append(errs, fmt.Errorf("%s: %s, want >= 0", d.name, d.v))
		}
	}
	if c.DecodeBase+c.DecodePerSeq <= 0 {
		errs = append(errs, errors.New("decode base + decode per seq: 0, a step must take time"))
	}
	if err := validDialect(c.Dialect); err != nil {
		errs = append(errs, err)
	}
	if err := c.Power.Validate(); err != nil {
		errs = append(errs, err)
	}
	if c.Memory.WeightsBytes < 0 || c.Memory.KVCacheBytes < 0 {
		errs = append(errs, fmt.Errorf("memory: weights %g, KV cache %g bytes: want >= 0", c.Memory.WeightsBytes, c.Memory.KVCacheBytes))
	}
	if c.FrontendDelay < 0 {
		errs = append(errs, fmt.Errorf("frontend delay: %s, want >= 0", c.FrontendDelay))
	}
	if c.EOSMeanTokens < 0 {
		errs = append(errs, fmt.Errorf("eos mean tokens: %g, want >= 0", c.EOSMeanTokens))
	}
	for _, r := range []struct {
		name string
		v    float64
	}{
		{"error rate", c.Faults.ErrorRate}, {"stall rate", c.Faults.StallRate},
		{"truncate rate", c.Faults.TruncateRate}, {"slow first token rate", c.Faults.SlowFirstTokenRate},
	} {
		if !(r.v >= 0 && r.v <= 1) {
			errs = append(errs, fmt.Errorf("fault %s: %g, want in [0, 1]", r.name, r.v))
		}
	}
	return errors.Join(errs...)
}
