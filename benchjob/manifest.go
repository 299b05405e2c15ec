package benchjob

import (
	"context"
	"fmt"

	"go.yaml.in/yaml/v3"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"

	"github.com/joulemark/joulemark/internal/version"
	"github.com/joulemark/joulemark/phaseapi"
	"github.com/joulemark/joulemark/remotewrite"
	"github.com/joulemark/joulemark/runinfo"
)

// Manifest is runs/<run_id>/manifest.json: what was run, where, with what,
// and what came of it. Secrets never appear: the config holds file paths,
// and HTTP secrets marshal as <secret>.
type Manifest struct {
	RunID  string   `json:"run_id"`
	Status string   `json:"status"` // running, completed, aborted, failed
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
	RunInfo     *runinfo.Info      `json:"run_info,omitempty"`
	RemoteWrite *remotewrite.Stats `json:"remote_write,omitempty"`
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
	CapWaitSeconds float64 `json:"cap_wait_seconds,omitempty"`
	// ClientCPURatio is the benchmark process' CPU time over the formal
	// phase divided by wall time and usable CPUs.
	ClientCPURatio float64 `json:"client_cpu_ratio"`
}

// configYAML renders c as YAML (secrets marshal as <secret>), and the same
// document as a generic map for the manifest.
func configYAML(c *Config) ([]byte, map[string]any, error) {
	b, err := yaml.Marshal(c)
	if err != nil {
		return nil, nil, fmt.Errorf("encoding config: %w", err)
	}
	var m map[string]any
	if err := yaml.Unmarshal(b, &m); err != nil {
		return nil, nil, fmt.Errorf("encoding config: %w", err)
	}
	return b, m, nil
}

func hostInfo() HostInfo {
	h, _ := os.Hostname()
	return HostInfo{Hostname: h, OS: runtime.GOOS, Arch: runtime.GOARCH, CPUs: runtime.NumCPU(), GoVersion: runtime.Version()}
}

func joulemarkInfo() JoulemarkInfo {
	v, rev, dirty := version.Info()
	return JoulemarkInfo{Version: v, Revision: rev, Dirty: dirty}
}

// gitInfo returns the commit and dirty flag of the checkout in the working
// directory, or nil when it is not one (or git is missing).
func gitInfo(ctx context.Context) *GitInfo {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "git", "rev-parse", "HEAD").Output()
	if err != nil {
		return nil
	}
	g := &GitInfo{Commit: strings.TrimSpace(string(out))}
	st, err := exec.CommandContext(ctx, "git", "status", "--porcelain", "--untracked-files=no").Output()
	if err == nil {
		g.Dirty = len(strings.TrimSpace(string(st))) > 0
	}
	return g
}

func thinking(c *Config) string {
	switch {
	case c.Extras.EnableThinking == nil:
		return "engine_default"
	case *c.Extras.EnableThinking:
		return "enabled"
	default:
		return "disabled"
	}
}
