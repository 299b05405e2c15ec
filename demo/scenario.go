package demo

import (
	"fmt"
	"strings"
	"time"
)

// Scenarios: the situations the diagnosis names, one per rule, on the
// demo's simulated engine (docs/demo.md, "Scenarios"). Each changes only
// what makes its situation: the rest is the configuration it is given.
const (
	ScenarioHealthy     = "healthy"      // the default: no rule fires
	ScenarioQueueing    = "queueing"     // a batch limit below the offered concurrency
	ScenarioKVEvictions = "kv-evictions" // a KV cache too small for the batch: preemptions
	ScenarioSlowPrefill = "slow-prefill" // long prompts on a slow prefill, nothing waits
	ScenarioClientBound = "client-bound" // a proxy delay between client and engine
)

// Scenarios lists the scenario names.
var Scenarios = []string{ScenarioHealthy, ScenarioQueueing, ScenarioKVEvictions, ScenarioSlowPrefill, ScenarioClientBound}

// ApplyScenario shapes c into the named scenario.
func ApplyScenario(c *Config, name string) error {
	e := &c.Engine
	c.Scenario = name
	switch name {
	case ScenarioHealthy:
	case ScenarioQueueing:
		// The case: 24 concurrent requests on 4 batch slots.
		e.MaxBatch = 4
		c.Concurrency = max(c.Concurrency, 6*e.MaxBatch)
	case ScenarioKVEvictions:
		// Room for the prompts of about half the requests at once, and
		// their completions grow into it: the engine preempts.
		e.MaxBatch = max(e.MaxBatch, c.Concurrency)
		e.MaxModelLen = 2 * (c.InputTokens + c.OutputTokens + c.OutputStddev*4)
		e.KVCacheTokens = max(e.MaxModelLen, c.Concurrency*(c.InputTokens+c.OutputTokens)/2)
		e.MaxNumBatchedTokens = max(e.MaxNumBatchedTokens, e.MaxBatch+1)
	case ScenarioSlowPrefill:
		// Long prompts on a prefill twelve times slower than the default:
		// each takes about a second, with batch and KV room to spare; short
		// answers, so the prefill dominates.
		c.InputTokens = 2000
		c.OutputTokens, c.OutputStddev = 30, 5
		c.Concurrency = min(c.Concurrency, 4)
		e.PrefillPerToken = 600 * time.Microsecond
		e.MaxNumBatchedTokens = 2048
		e.MaxBatch = max(e.MaxBatch, 4*c.Concurrency)
		e.MaxModelLen = max(e.MaxModelLen, 4*(c.InputTokens+c.OutputTokens))
		e.KVCacheTokens = max(e.KVCacheTokens, 2*c.Concurrency*e.MaxModelLen)
	case ScenarioClientBound:
		// Requests spend 2 s in a proxy before the engine sees them and
		// half a second in it: the engine holds a fifth of them.
		e.FrontendDelay = 2 * time.Second
		c.OutputTokens, c.OutputStddev = 30, 5
	default:
		return fmt.Errorf("scenario %q: want one of %s", name, strings.Join(Scenarios, ", "))
	}
	return nil
}
