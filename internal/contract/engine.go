package contract

import "slices"

// Inference engines: whose metric names a serving engine's /metrics speaks.
const (
	EngineVLLM   = "vllm"
	EngineSGLang = "sglang"
)

// Engines are the engines whose metrics joulemark reads, in the order
// their names are preferred within a role.
var Engines = []string{EngineVLLM, EngineSGLang}

// EngineRole is what an engine metric measures, whatever the engine calls it.
type EngineRole string

// Engine metric roles.
const (
	RoleRunning          EngineRole = "running"           // requests in the batch
	RoleWaiting          EngineRole = "waiting"           // requests queued
	RoleKVCache          EngineRole = "kv_cache"          // KV-cache usage, 0..1
	RolePreemptions      EngineRole = "preemptions"       // preemptions (SGLang: retractions), counter
	RoleRetractedNow     EngineRole = "retracted_now"     // SGLang's gauge: the latest step's retractions
	RoleGenerationTokens EngineRole = "generation_tokens" // output tokens generated, counter
	RolePromptTokens     EngineRole = "prompt_tokens"     // prompt (prefill) tokens, counter
	RoleUsedTokens       EngineRole = "used_tokens"       // SGLang's KV-cache tokens in use
	RoleRequestSuccess   EngineRole = "request_success"   // vLLM's finished requests, by finished_reason
	RoleTTFT             EngineRole = "ttft"              // time to first token, histogram
	RoleE2ELatency       EngineRole = "e2e_latency"       // end-to-end request latency, histogram
)

// EngineMetric is one metric of an inference engine's /metrics.
type EngineMetric struct {
	Role   EngineRole
	Engine string // EngineVLLM or EngineSGLang
	Name   string
	Type   string // "gauge", "counter" or "histogram"
}

// EngineMetrics are the engines' metric names joulemark reads or its
// simulated engine publishes: vLLM's from
// https://docs.vllm.ai/en/stable/usage/metrics/, SGLang's from
// python/sglang/srt/metrics/collector.py. Within a role they are in order
// of preference (first found wins): vLLM before SGLang, and vLLM V1's
// kv_cache_usage_perc before gpu_cache_usage_perc, its name before V1.
var EngineMetrics = []EngineMetric{
	{RoleRunning, EngineVLLM, "vllm:num_requests_running", "gauge"},
	{RoleRunning, EngineSGLang, "sglang:num_running_reqs", "gauge"},
	{RoleWaiting, EngineVLLM, "vllm:num_requests_waiting", "gauge"},
	{RoleWaiting, EngineSGLang, "sglang:num_queue_reqs", "gauge"},
	{RoleKVCache, EngineVLLM, "vllm:kv_cache_usage_perc", "gauge"},
	{RoleKVCache, EngineVLLM, "vllm:gpu_cache_usage_perc", "gauge"},
	{RoleKVCache, EngineSGLang, "sglang:token_usage", "gauge"},
	{RolePreemptions, EngineVLLM, "vllm:num_preemptions_total", "counter"},
	{RolePreemptions, EngineSGLang, "sglang:num_retracted_requests_total", "counter"},
	{RoleRetractedNow, EngineSGLang, "sglang:num_retracted_reqs", "gauge"},
	{RoleGenerationTokens, EngineVLLM, "vllm:generation_tokens_total", "counter"},
	{RoleGenerationTokens, EngineSGLang, "sglang:generation_tokens_total", "counter"},
	{RolePromptTokens, EngineVLLM, "vllm:prompt_tokens_total", "counter"},
	{RolePromptTokens, EngineSGLang, "sglang:prompt_tokens_total", "counter"},
	{RoleUsedTokens, EngineSGLang, "sglang:num_used_tokens", "gauge"},
	{RoleRequestSuccess, EngineVLLM, "vllm:request_success_total", "counter"},
	{RoleTTFT, EngineVLLM, "vllm:time_to_first_token_seconds", "histogram"},
	{RoleTTFT, EngineSGLang, "sglang:time_to_first_token_seconds", "histogram"},
	{RoleE2ELatency, EngineVLLM, "vllm:e2e_request_latency_seconds", "histogram"},
	{RoleE2ELatency, EngineSGLang, "sglang:e2e_request_latency_seconds", "histogram"},
}

// ServerRoles are the roles analyze's server view reads (docs/analyze.md,
// "Server view and diagnosis"), in its order.
var ServerRoles = []EngineRole{
	RoleRunning, RoleWaiting, RoleKVCache, RolePreemptions, RoleRetractedNow, RoleGenerationTokens,
}

// EngineNames returns the names of a role over the given engines (all
// when none), in order of preference.
func EngineNames(role EngineRole, engines ...string) []string {
	var out []string
	for _, m := range EngineMetrics {
		if m.Role == role && (len(engines) == 0 || slices.Contains(engines, m.Engine)) {
			out = append(out, m.Name)
		}
	}
	return out
}

// EngineName returns an engine's preferred name for a role, "" when the
// engine has none.
func EngineName(engine string, role EngineRole) string {
	if n := EngineNames(role, engine); len(n) > 0 {
		return n[0]
	}
	return ""
}

// EngineMetricsOf returns an engine's metrics.
func EngineMetricsOf(engine string) []EngineMetric {
	var out []EngineMetric
	for _, m := range EngineMetrics {
		if m.Engine == engine {
			out = append(out, m)
		}
	}
	return out
}
