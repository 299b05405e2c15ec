package runarchive

import (
	"github.com/joulemark/joulemark/internal/contract"
	"github.com/joulemark/joulemark/internal/stats"

	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/joulemark/joulemark/internal/jsonline"
	"github.com/joulemark/joulemark/internal/phaseapi"
	"github.com/joulemark/joulemark/internal/remotewrite"
)

// Run statuses in manifest.json.
const (
	// StatusRunning: the run goes on, or died without a final manifest.
	StatusRunning = "running"
	// StatusCompleted: the lifecycle ran to its end.
	StatusCompleted = "completed"
	// StatusAborted: interrupted (Ctrl-C, SIGTERM); the archive is final.
	StatusAborted = "aborted"
	// StatusFailed: an error ended the run (engine not ready, ...).
	StatusFailed = "failed"
	// StatusKilled: the bench died without ending the run (SIGKILL, crash)
	// and Finalize made the archive final afterwards.
	StatusKilled = "killed"
)

// Final reports whether status is one a run ends with.
func Final(status string) bool {
	switch status {
	case StatusCompleted, StatusAborted, StatusFailed, StatusKilled:
		return true
	}
	return false
}

// Manifest is runs/<run_id>/manifest.json: what was run, where, with what,
// and what came of it. Secrets never appear: the config holds file paths,
// and HTTP secrets marshal as <secret>.
type Manifest struct {
	RunID  string   `json:"run_id"`
	Status string   `json:"status"` // running, completed, aborted, failed, killed
	Error  string   `json:"error,omitempty"`
	Flags  []string `json:"flags"`

	// Config is the run's config as written to config.yaml (durations as
	// "20s"); ConfigSHA256 is the SHA-256 of that file.
	Config       map[string]any `json:"config"`
	ConfigSHA256 string         `json:"config_sha256"`
	// PromptSetSHA256 covers every prompt sent (text and max_tokens, in
	// order), warm-up included; Prompts is their count.
	PromptSetSHA256 string `json:"prompt_set_sha256"`
	Prompts         int    `json:"prompts"`
	// With a trace, warm-up prompts are synthetic and hashed apart.
	WarmupPromptSetSHA256 string `json:"warmup_prompt_set_sha256,omitempty"`
	WarmupPrompts         int    `json:"warmup_prompts,omitempty"`

	// Bench is the process that runs (ran) the bench: while it lives, the
	// run's end is its own (runs finalize refuses).
	Bench *BenchProcess `json:"bench,omitempty"`

	Joulemark JoulemarkInfo `json:"joulemark"`
	Git       *GitInfo      `json:"git,omitempty"`
	Host      HostInfo      `json:"host"`
	// GPUs per exporter base URL, as each exporter reported them.
	GPUs map[string][]phaseapi.GPUInfo `json:"gpus"`

	Engine   EngineInfo `json:"engine"`
	Thinking string     `json:"thinking"` // enabled, disabled, engine_default

	Load LoadInfo `json:"load"`

	// Times are unix seconds.
	Created float64            `json:"created"`
	Ended   float64            `json:"ended,omitempty"`
	Phases  map[string]float64 `json:"phase_starts"` // client-side instant each phase was posted

	Summary *Summary `json:"summary,omitempty"`
	// RunInfo is the run's identity, as pushed in joulemark_run_info.
	RunInfo     *contract.RunIdentity `json:"run_info,omitempty"`
	RemoteWrite *remotewrite.Stats    `json:"remote_write,omitempty"`
	// SamplesAt is the instant (unix seconds) the bench stamped its final
	// remote-write samples with (aggregates, run identity); `joulemark runs
	// push` re-sends them with it. Absent without remote write.
	SamplesAt float64 `json:"samples_at,omitempty"`
}

// BenchProcess identifies the bench process of a run.
type BenchProcess struct {
	PID int `json:"pid"`
	// StartTicks is the process' start time (/proc/<pid>/stat field 22):
	// a recycled pid has another one.
	StartTicks uint64 `json:"start_ticks,omitempty"`
	Hostname   string `json:"hostname"`
}

// IgnoreEOS is the run's extras.ignore_eos from the config section; nil
// when it was not set (or there is no config).
func (m *Manifest) IgnoreEOS() *bool {
	if v, ok := m.configValue("extras", "ignore_eos").(bool); ok {
		return &v
	}
	return nil
}

// WorkloadKind is the run's workload.kind from the config section
// (synthetic, dataset, trace, correctness, ...); "" when not set.
func (m *Manifest) WorkloadKind() string {
	v, _ := m.configValue("workload", "kind").(string)
	return v
}

// configValue is the config's section.key; nil when absent.
func (m *Manifest) configValue(section, key string) any {
	sec, _ := m.Config[section].(map[string]any)
	return sec[key]
}

// JoulemarkInfo is the build that ran.
type JoulemarkInfo struct {
	Version  string `json:"version"`
	Revision string `json:"revision,omitempty"`
	Dirty    bool   `json:"dirty,omitempty"`
}

// GitInfo is the checkout the run was started from.
type GitInfo struct {
	Commit string `json:"commit"`
	Dirty  bool   `json:"dirty"`
}

// HostInfo is the client host.
type HostInfo struct {
	Hostname  string `json:"hostname"`
	OS        string `json:"os"`
	Arch      string `json:"arch"`
	CPUs      int    `json:"cpus"`
	GoVersion string `json:"go_version"`
}

// EngineInfo is the engine under test.
type EngineInfo struct {
	Cmd           string   `json:"cmd,omitempty"`
	StartHook     string   `json:"start_hook,omitempty"`
	StopHook      string   `json:"stop_hook,omitempty"`
	Controller    string   `json:"controller"` // process, hooks, custom, none
	Version       string   `json:"version,omitempty"`
	ReportedVer   string   `json:"reported_version,omitempty"`
	Image         string   `json:"image,omitempty"`
	Model         string   `json:"model"`
	ModelRevision string   `json:"model_revision,omitempty"`
	ServedModels  []string `json:"served_models,omitempty"`
	MaxModelLen   int      `json:"max_model_len,omitempty"`
	Target        string   `json:"target"`
	ReadySeconds  float64  `json:"ready_seconds,omitempty"`
	ExitError     string   `json:"exit_error,omitempty"`
}

// LoadInfo is the load shape and how well the client held it.
type LoadInfo struct {
	Mode           string  `json:"mode"` // closed, poisson, gamma, trace
	Concurrency    int     `json:"concurrency,omitempty"`
	TargetRate     float64 `json:"target_rate,omitempty"`
	AchievedRate   float64 `json:"achieved_rate"`
	Burstiness     float64 `json:"burstiness,omitempty"`
	MaxConcurrency int     `json:"max_concurrency,omitempty"`
	LagP50Seconds  float64 `json:"lag_p50_seconds,omitempty"`
	LagP99Seconds  float64 `json:"lag_p99_seconds,omitempty"`
	// MaxLagSeconds is the run's max_lag, past which its lag p99 is
	// flagged client_could_not_keep_up (0: no limit).
	MaxLagSeconds  float64 `json:"max_lag_seconds,omitempty"`
	CapWaitSeconds float64 `json:"cap_wait_seconds,omitempty"`
	// RetryAfterWaitSeconds is how long the formal load paused because
	// the engine asked for it (Retry-After on a 429 or 503).
	RetryAfterWaitSeconds float64 `json:"retry_after_wait_seconds,omitempty"`
	// ClientCPURatio is the benchmark process' CPU time over the formal
	// phase divided by wall time and usable CPUs.
	ClientCPURatio float64 `json:"client_cpu_ratio"`
}

// Percentiles of one latency measure, in seconds, over N values (failed
// requests included, as infinitely slow: stats' policy).
type Percentiles struct {
	N int `json:"n"`
	stats.Percentiles
}

// Summary is the formal phase in figures: error rate first.
type Summary struct {
	Started      int            `json:"started"`
	Succeeded    int            `json:"succeeded"`
	Failed       int            `json:"failed"`
	ErrorRate    float64        `json:"error_rate"`
	Errors       map[string]int `json:"errors"`
	OutputTokens int64          `json:"output_tokens"`
	InputTokens  int64          `json:"input_tokens"`
	TokensSource map[string]int `json:"tokens_source"`
	EmptyOutputs int            `json:"empty_outputs"`
	// DurationSeconds runs from the first send to the last end.
	DurationSeconds       float64 `json:"duration_seconds"`
	RequestsPerSecond     float64 `json:"requests_per_second"`
	OutputTokensPerSecond float64 `json:"output_tokens_per_second"`
	// TTFT, TPOT and latency are over every formal request, a failed one
	// counting as infinitely slow (internal/stats), as in the report.
	TTFT    Percentiles `json:"ttft_seconds"`
	TPOT    Percentiles `json:"tpot_seconds"`
	Latency Percentiles `json:"latency_seconds"`
}

// WriteManifest writes manifest.json atomically (temporary file, fsync,
// rename): a reader sees the previous manifest or this one, never a part.
func (r *Run) WriteManifest(m *Manifest) error {
	return r.WriteJSON(ManifestFile, m)
}

// WriteJSON writes v as indented JSON to name, atomically.
func (r *Run) WriteJSON(name string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("run archive %s: encoding %s: %w", r.Dir, name, err)
	}
	return r.WriteFile(name, append(b, '\n'))
}

// ReadManifest reads the run's manifest.json. A run without one gets an
// error wrapping ErrNoManifest (and fs.ErrNotExist).
func (r *Run) ReadManifest() (*Manifest, error) {
	return readDocument[Manifest](r, ManifestFile, ErrNoManifest)
}

// readDocument reads the run's JSON document name; a run without one gets
// an error wrapping missing (and fs.ErrNotExist).
func readDocument[T any](r *Run, name string, missing error) (*T, error) {
	p := r.Path(name)
	data, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("run archive %s: %w", r.Dir, missing)
	}
	if err != nil {
		return nil, fmt.Errorf("run archive: %w", err)
	}
	doc := new(T)
	if err := json.Unmarshal(data, doc); err != nil {
		return nil, fmt.Errorf("run archive: reading %s: %w", p, jsonline.Wrap(data, err))
	}
	return doc, nil
}
