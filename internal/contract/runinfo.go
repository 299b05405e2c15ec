// RunIdentity is a run's identity: what was tested (model, engine, GPU,
// load, token lengths, prompt set). The bench job pushes it to Prometheus as
// the info metric joulemark_run_info{...} 1 beside the per-request samples
// and writes it to the run archive; analyze reads it back into report.json
// "run", and compare, pareto, recommend and plan group by its keys.
package contract

import (
	"slices"
	"strconv"
	"strings"
)

// RunIdentity is a run's identity. JSON keys are report.json "run.*" keys and the
// metric's label names (public API, docs/design.md).
type RunIdentity struct {
	RunID            string  `json:"run_id"`
	Model            string  `json:"model"`
	Engine           string  `json:"engine"` // vllm, sglang, sim, … (the served model's owned_by)
	EngineVersion    string  `json:"engine_version"`
	GPUName          string  `json:"gpu_name"` // several names joined by "+"
	GPUs             int     `json:"gpus"`
	Scenario         string  `json:"scenario"`
	LoadMode         string  `json:"load_mode"` // closed, poisson, gamma, trace
	Concurrency      int     `json:"concurrency"`
	Rate             float64 `json:"rate"` // requests/s (open loop)
	MeanInputTokens  float64 `json:"mean_input_tokens"`
	MeanOutputTokens float64 `json:"mean_output_tokens"`
	IgnoreEOS        bool    `json:"ignore_eos"`
	DatasetSHA256    string  `json:"dataset_sha256"` // the prompt set sent (manifest prompt_set_sha256)
	// Mode is how the engine was measured: ModeLifecycle (the bench started
	// and stopped it: idle, startup, warm-up, formal, release) or
	// ModeAttached (an engine already running, --engine.no-lifecycle: the formal
	// phase only). Empty in identities from before the mode: lifecycle.
	Mode string `json:"mode,omitempty"`
	// RepetitionGroup is the repetition group the run belongs to (bench
	// --repeat N, experiment repeat: N): the run id its N cold lifecycles
	// share as a prefix (<group>-rep1 … -repN). Repetition is this run's
	// 1-based index, Repetitions the group's N. Empty and 0 for a run that
	// is no repetition.
	RepetitionGroup string `json:"repetition_group,omitempty"`
	Repetition      int    `json:"repetition,omitempty"`
	Repetitions     int    `json:"repetitions,omitempty"`
}

// Measurement modes (run.mode, report.json mode).
const (
	ModeLifecycle = "lifecycle" // cold start: the whole lifecycle measured
	ModeAttached  = "attached"  // an already running engine: steady-state figures only
)

// EffectiveMode is the identity's mode, ModeLifecycle when it names none
// (identities from before the mode were all cold-start lifecycles).
func (i RunIdentity) EffectiveMode() string {
	if i.Mode == "" {
		return ModeLifecycle
	}
	return i.Mode
}

// RunIdentityLabels lists the metric's labels in a stable order.
var RunIdentityLabels = []string{"run_id", "model", "engine", "engine_version", "gpu_name", "gpus", "scenario",
	"load_mode", "concurrency", "rate", "mean_input_tokens", "mean_output_tokens", "ignore_eos", "dataset_sha256", "mode",
	"repetition_group", "repetition", "repetitions"}

// RunIdentityKeys are the keys whose runs are never pooled in one median
// unless asked: a different model, engine, GPU, prompt set or load point is
// a different experiment; so is another repetition group (two groups of
// one configuration are two experiments, pooled only when asked).
var RunIdentityKeys = []string{"model", "engine", "engine_version", "gpu_name", "gpus", "dataset_sha256",
	"load_mode", "concurrency", "rate", "mode", "repetition_group"}

func runInfoNum(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// count is n as a label value, "" (no label) for 0.
func runInfoCount(n int) string {
	if n == 0 {
		return ""
	}
	return strconv.Itoa(n)
}

// Configuration is the identity without what tells repetitions of one
// configuration apart (run_id, repetition): two runs pool as repetitions
// only when their Configuration is equal, group included.
func (i RunIdentity) Configuration() RunIdentity {
	i.RunID, i.Repetition = "", 0
	return i
}

// Labels are the metric's labels; empty values are left out (Prometheus
// drops empty labels anyway).
func (i RunIdentity) Labels() map[string]string {
	all := map[string]string{
		"run_id": i.RunID, "model": i.Model, "engine": i.Engine, "engine_version": i.EngineVersion,
		"gpu_name": i.GPUName, "gpus": strconv.Itoa(i.GPUs), "scenario": i.Scenario, "load_mode": i.LoadMode,
		"concurrency": strconv.Itoa(i.Concurrency), "rate": runInfoNum(i.Rate),
		"mean_input_tokens": runInfoNum(i.MeanInputTokens), "mean_output_tokens": runInfoNum(i.MeanOutputTokens),
		"ignore_eos": strconv.FormatBool(i.IgnoreEOS), "dataset_sha256": i.DatasetSHA256, "mode": i.Mode,
		"repetition_group": i.RepetitionGroup, "repetition": runInfoCount(i.Repetition), "repetitions": runInfoCount(i.Repetitions),
	}
	for k, v := range all {
		if v == "" {
			delete(all, k)
		}
	}
	return all
}

// RunIdentityFromLabels reads an RunIdentity back from the metric's labels; a label that is
// missing or does not parse leaves its field zero.
func RunIdentityFromLabels(l map[string]string) RunIdentity {
	atoi := func(s string) int { n, _ := strconv.Atoi(s); return n }
	atof := func(s string) float64 { f, _ := strconv.ParseFloat(s, 64); return f }
	b, _ := strconv.ParseBool(l["ignore_eos"])
	return RunIdentity{
		RunID: l["run_id"], Model: l["model"], Engine: l["engine"], EngineVersion: l["engine_version"],
		GPUName: l["gpu_name"], GPUs: atoi(l["gpus"]), Scenario: l["scenario"], LoadMode: l["load_mode"],
		Concurrency: atoi(l["concurrency"]), Rate: atof(l["rate"]),
		MeanInputTokens: atof(l["mean_input_tokens"]), MeanOutputTokens: atof(l["mean_output_tokens"]),
		IgnoreEOS: b, DatasetSHA256: l["dataset_sha256"], Mode: l["mode"],
		RepetitionGroup: l["repetition_group"], Repetition: atoi(l["repetition"]), Repetitions: atoi(l["repetitions"]),
	}
}

// Load is "concurrency 16", "rate 5 req/s (poisson)" or the mode alone.
func (i RunIdentity) Load() string {
	switch {
	case i.Concurrency > 0 && i.Rate == 0:
		return "concurrency " + strconv.Itoa(i.Concurrency)
	case i.Rate > 0:
		return "rate " + runInfoNum(i.Rate) + " req/s (" + i.LoadMode + ")"
	}
	return i.LoadMode
}

// EngineLabel is the engine and its version, each named once: "vllm
// 0.6.3"; a version that already starts with the engine's name is not
// prefixed with it again; "-" when neither is known.
func (i RunIdentity) EngineLabel() string {
	switch {
	case i.Engine == "" && i.EngineVersion == "":
		return "-"
	case i.EngineVersion == "":
		return i.Engine
	case i.Engine == "" || strings.HasPrefix(i.EngineVersion, i.Engine):
		return i.EngineVersion
	}
	return i.Engine + " " + i.EngineVersion
}

// Hardware is the GPUs a run measured: "2 × NVIDIA H200", "-" when unknown.
func (i RunIdentity) Hardware() string {
	if i.GPUs == 0 && i.GPUName == "" {
		return "-"
	}
	name := i.GPUName
	if name == "" {
		name = "unnamed GPU"
	}
	return strconv.Itoa(i.GPUs) + " × " + name
}

// JoinGPUNames joins distinct GPU names in order of first appearance with "+".
func JoinGPUNames(names []string) string {
	var out []string
	for _, n := range names {
		if n != "" && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return strings.Join(out, "+")
}
