// Package benchjob drives an OpenAI-compatible inference engine through the
// measured lifecycle (idle, startup, warm-up, formal, release), posts the
// phases to the exporters, pushes one sample per request to Prometheus by
// remote write and keeps a complete run archive on disk.
package benchjob

import (
	"errors"
	"fmt"
	"math"
	"net/url"
	"strings"
	"time"

	"github.com/prometheus/common/config"

	"github.com/joulemark/joulemark/benchjob/openai"
	"github.com/joulemark/joulemark/internal/clientflags"
	"github.com/joulemark/joulemark/internal/contract"
	"github.com/joulemark/joulemark/internal/phaseapi"
	"github.com/joulemark/joulemark/internal/secretfile"
)

// Config is one benchmark run. It is a plain struct: experiments load it
// from strict YAML, and it is the bench command's flag model too (its kong
// tags: a flag is named after the setting's YAML path, `_` written `-`;
// kong:"-" marks a setting only the experiment file gives). Durations in
// YAML are Go durations ("20s", "10m").
type Config struct {
	// Target is the OpenAI base URL, e.g. http://host:8000/v1.
	Target string `yaml:"target" json:"target" name:"target" group:"Target" help:"OpenAI base URL, e.g. http://host:8000/v1."`
	// Model is the served model id; empty takes the first id /v1/models lists.
	Model string `yaml:"model" json:"model" name:"model" group:"Target" help:"Served model id (default: the first one /v1/models lists)."`
	// Endpoint is completions or chat.
	Endpoint string `yaml:"endpoint" json:"endpoint" name:"endpoint" group:"Target" help:"API: completions or chat."`

	// Load shape: Concurrency (closed loop) or Rate (open loop, requests/s).
	Concurrency    int     `yaml:"concurrency" json:"concurrency" name:"concurrency" group:"Load" help:"Closed loop: N requests in flight (default ${bench_default_concurrency} when no --rate, trace or sweep is given)."`
	Rate           float64 `yaml:"rate" json:"rate" name:"rate" group:"Load" help:"Open loop: target request rate (req/s)."`
	Burstiness     float64 `yaml:"burstiness" json:"burstiness" kong:"-"`
	MaxConcurrency int     `yaml:"max_concurrency" json:"max_concurrency" kong:"-"`
	// SweepConcurrency and SweepRate run one run per value, each its own run
	// id (<run_id>-c<N> or <run_id>-r<R>).
	SweepConcurrency []int     `yaml:"sweep_concurrency" json:"sweep_concurrency,omitempty" name:"sweep-concurrency" placeholder:"N" group:"Load" help:"Run once per concurrency, e.g. 1,2,4 (each its own run)."`
	SweepRate        []float64 `yaml:"sweep_rate" json:"sweep_rate,omitempty" name:"sweep-rate" placeholder:"R" group:"Load" help:"Run once per rate, e.g. 1,2,4 (each its own run)."`
	// Repeat runs the configuration (each sweep point) N times, each a cold
	// lifecycle with its own run id <run_id>-rep<i>, under one repetition
	// group (run.repetition_group); 0 or 1: once.
	Repeat int `yaml:"repeat" json:"repeat,omitempty" name:"repeat" placeholder:"N" group:"Load" help:"Run the configuration (each sweep point) N times, each a cold lifecycle with its own run id <run-id>-rep<i>, under one repetition group that compare, pareto, recommend, plan and diff pool."`
	// repetition places a run Sweep expanded from Repeat in its group.
	repetition repetition

	// Requests and/or Duration bound the formal phase (the first reached ends it).
	Requests       int           `yaml:"requests" json:"requests" name:"requests" group:"Load" help:"Formal requests (and/or --duration; default ${bench_default_requests} without either). Fewer than windows + 2×concurrency (${bench_steady_need} at concurrency ${bench_default_concurrency}) cannot reach the steady state: warned before the load."`
	Duration       time.Duration `yaml:"duration" json:"duration" name:"duration" group:"Load" help:"Formal phase length (and/or --requests)."`
	WarmupRequests int           `yaml:"warmup_requests" json:"warmup_requests" name:"warmup-requests" group:"Load" help:"Warm-up requests."`
	IdleDuration   time.Duration `yaml:"idle_duration" json:"idle_duration" name:"idle-duration" group:"Load" help:"Idle baseline before the engine starts."`
	// MaxLag is the scheduling lag (open loop) past which the run is
	// flagged client_could_not_keep_up.
	MaxLag time.Duration `yaml:"max_lag" json:"max_lag" kong:"-"`

	Workload     Workload      `yaml:"workload" json:"workload" embed:"" prefix:"workload." group:"Workload"`
	Extras       openai.Extras `yaml:"extras" json:"extras" embed:"" prefix:"extras." group:"Engine extras"`
	Timeouts     Timeouts      `yaml:"timeouts" json:"timeouts" embed:"" prefix:"timeouts." group:"Timeouts"`
	Engine       EngineConfig  `yaml:"engine" json:"engine" embed:"" prefix:"engine." group:"Engine"`
	RequireUsage bool          `yaml:"require_usage" json:"require_usage" kong:"-"`

	// Exporters are the phase API base URLs (one per node); their token
	// comes from ExporterTokenFile, else JOULEMARK_API_TOKEN.
	Exporters         []string `yaml:"exporters" json:"exporters" kong:"-"`
	ExporterTokenFile string   `yaml:"exporter_token_file" json:"exporter_token_file,omitempty" kong:"-"`
	// ExporterGPUs makes the run measure only these GPU UUIDs (the first
	// phase's selector); Engine.Pod selects the GPUs the kubelet lists for
	// the engine's pod instead. Neither: every GPU, refused in pre-flight
	// by an exporter that knows which pods hold its GPUs.
	ExporterGPUs []string `yaml:"gpus" json:"gpus,omitempty" name:"gpus" placeholder:"UUID" group:"Exporters" help:"Measure only these GPU UUIDs (comma-separated or repeated): the engine's GPUs. Default: every GPU of the exporters, refused by one that knows which pods hold its GPUs (give --engine.pod)."`
	// ExporterHTTP is the exporters' TLS and basic auth (basic auth moves
	// the token to the X-Joulemark-Token header).
	ExporterHTTP config.HTTPClientConfig `yaml:"exporter_http,omitempty" json:"exporter_http" kong:"-"`

	// Prometheus, when set, is asked before the run whether it already
	// holds phases of the run id.
	Prometheus Prometheus `yaml:"prometheus" json:"prometheus" kong:"-"`

	RemoteWrite RemoteWrite `yaml:"remote_write" json:"remote_write" kong:"-"`

	// APIKeyFile holds the engine's API key; else OPENAI_API_KEY is used,
	// unless TargetHTTP has an authorization or basic_auth section.
	APIKeyFile string `yaml:"api_key_file" json:"api_key_file,omitempty" kong:"-"`
	// TargetHTTP is the engine's HTTP client configuration (TLS,
	// authorization or basic_auth, http_headers, proxy_url): see
	// openai.Config.HTTP.
	TargetHTTP config.HTTPClientConfig `yaml:"target_http,omitempty" json:"target_http" kong:"-"`

	RunsDir string `yaml:"runs_dir" json:"runs_dir" name:"runs-dir" group:"Archive" help:"Where run archives go."`
	RunID   string `yaml:"run_id" json:"run_id" name:"run-id" type:"runid" group:"Archive" help:"Run id (generated when absent; an existing one is refused)."`
	// Scenario names the experiment in joulemark_run_info and the report's
	// run.scenario (compare groups by it).
	Scenario string `yaml:"scenario" json:"scenario,omitempty" name:"scenario" group:"Archive" help:"Scenario name pushed in joulemark_run_info (report run.scenario; compare groups by it)."`
}

// Workload says what is sent.
type Workload struct {
	MeanInputTokens    int    `yaml:"mean_input_tokens" json:"mean_input_tokens" name:"mean-input-tokens" help:"Synthetic prompts: mean input length."`
	StddevInputTokens  int    `yaml:"stddev_input_tokens" json:"stddev_input_tokens" kong:"-"`
	MeanOutputTokens   int    `yaml:"mean_output_tokens" json:"mean_output_tokens" name:"mean-output-tokens" help:"Mean output length (max_tokens)."`
	StddevOutputTokens int    `yaml:"stddev_output_tokens" json:"stddev_output_tokens" kong:"-"`
	Dataset            string `yaml:"dataset" json:"dataset,omitempty" name:"dataset" type:"existingfile" help:"JSONL dataset ({prompt, max_tokens} or ShareGPT conversations)."`
	Trace              string `yaml:"trace" json:"trace,omitempty" name:"trace" type:"existingfile" help:"Trace to replay (JSONL: time, input_tokens, output_tokens)."`
	Seed               int64  `yaml:"seed" json:"seed" kong:"-"`
	// Kind is "synthetic" (default: LLMPerf-style prompts of the mean
	// lengths) or "correctness" (numbers spelled out in words, answered in
	// digits; every answer checked, mismatches counted).
	Kind string `yaml:"kind" json:"kind,omitempty" name:"kind" help:"synthetic (the default: LLMPerf-style prompts) or correctness (numbers spelled out in words, answered in digits; mismatches counted per request)."`
	// QualityFile is a YAML rubric (contains_all, regex, forbidden per
	// prompt index, and for all prompts) every formal answer is checked
	// against (package quality).
	QualityFile string `yaml:"quality_file" json:"quality_file,omitempty" name:"quality-file" type:"existingfile" help:"YAML rubric (all / prompts[index]: contains_all, regex, forbidden) every answer is checked against; results in requests.jsonl quality."`
}

// Timeouts of one request; zero means no limit.
type Timeouts struct {
	Connect    time.Duration `yaml:"connect" json:"connect" kong:"-"`
	FirstToken time.Duration `yaml:"first_token" json:"first_token" kong:"-"`
	Total      time.Duration `yaml:"total" json:"total" name:"total" help:"Total timeout of one request (0: none)."`
	// Idle fails a request when no byte of its answer came for this long
	// (class timeout_idle; default 60s).
	Idle time.Duration `yaml:"idle" json:"idle" kong:"-"`
	// Drain is how long requests still running when the formal duration is
	// over may finish; then they are canceled (class canceled_at_end;
	// default 30s).
	Drain time.Duration `yaml:"drain" json:"drain" kong:"-"`
}

// EngineConfig says how the engine's lifecycle is driven.
type EngineConfig struct {
	// Cmd is launched (through sh -c) and owned: its output goes to the
	// archive; it is stopped with SIGTERM, then SIGKILL after StopGrace.
	Cmd string `yaml:"cmd" json:"cmd,omitempty" name:"cmd" help:"Launch and own the engine (sh -c); its output goes to the archive."`
	// Start and Stop are shell hooks for an externally managed engine.
	Start string `yaml:"start" json:"start,omitempty" name:"start" help:"Hook that starts an externally managed engine."`
	Stop  string `yaml:"stop" json:"stop,omitempty" name:"stop" help:"Hook that stops it."`
	// NoLifecycle measures an already running service: formal phase only.
	NoLifecycle bool `yaml:"no_lifecycle" json:"no_lifecycle" name:"no-lifecycle" help:"Measure an already running service (attached): formal phase only, flagged; analyze reports steady-state figures and names startup, release and full lifecycle not measured."`
	// QuietWindow, with NoLifecycle, is posted as the idle phase before the
	// formal one: the running engine without load from the bench (its
	// resident power, not the bare GPUs' baseline); 0: none.
	QuietWindow  time.Duration `yaml:"quiet_window" json:"quiet_window,omitempty" kong:"-"`
	ReadyTimeout time.Duration `yaml:"ready_timeout" json:"ready_timeout" kong:"-"`
	StopGrace    time.Duration `yaml:"stop_grace" json:"stop_grace" kong:"-"`
	// ReleaseWait bounds the wait for every exporter to report release
	// closed or timed out (the exporter has its own maximum wait).
	ReleaseWait time.Duration `yaml:"release_wait" json:"release_wait" kong:"-"`
	// Descriptive, recorded in the manifest.
	Version       string `yaml:"version" json:"version,omitempty" kong:"-"`
	Image         string `yaml:"image" json:"image,omitempty" kong:"-"`
	ModelRevision string `yaml:"model_revision" json:"model_revision,omitempty" kong:"-"`
	// Pod ("namespace/name") makes the run measure only the GPUs the
	// kubelet lists for the engine's pod (resolved by the exporters).
	Pod string `yaml:"pod" json:"pod,omitempty" name:"pod" placeholder:"NAMESPACE/NAME" help:"Measure only the GPUs the kubelet lists for the engine's pod, resolved by the exporter (instead of --gpus): NAMESPACE/NAME, or NAMESPACE/NAME-PREFIX* for a Deployment's pod; a lifecycle's pod may start with the engine. Required (or --gpus) when the exporter knows which pods hold its GPUs."`
	// Metrics scrapes the engine's own /metrics during the run (vLLM and
	// SGLang queue, KV-cache and preemption gauges) into the archive, from
	// MetricsURL (default: the target's root + /metrics) every
	// MetricsInterval.
	Metrics         bool          `yaml:"metrics" json:"metrics" name:"metrics" help:"Record the engine's own /metrics (queue, KV cache, preemptions) with the run."`
	MetricsURL      string        `yaml:"metrics_url" json:"metrics_url,omitempty" kong:"-"`
	MetricsInterval time.Duration `yaml:"metrics_interval" json:"metrics_interval" kong:"-"`
}

// Prometheus is the server the run id is checked against.
type Prometheus struct {
	URL  string                  `yaml:"url" json:"url,omitempty"`
	HTTP config.HTTPClientConfig `yaml:"http,omitempty" json:"http"`
	// Lookback is how far back a run id is looked for (default 90d: more
	// than any usual retention).
	Lookback time.Duration `yaml:"lookback" json:"lookback"`
}

// RemoteWrite says where per-request samples go.
type RemoteWrite struct {
	URL string `yaml:"url" json:"url,omitempty"`
	// HTTP carries bearer/basic auth, TLS and extra headers (X-Scope-OrgID);
	// its secrets marshal as <secret>.
	HTTP config.HTTPClientConfig `yaml:"http,omitempty" json:"http"`
	// AggregateInterval is how often aggregates are pushed (default 5s).
	AggregateInterval time.Duration `yaml:"aggregate_interval" json:"aggregate_interval"`
	// FlushTimeout bounds the final flush at the end of the run (default 30s).
	FlushTimeout time.Duration `yaml:"flush_timeout" json:"flush_timeout"`
}

// Defaults returns a Config with every default: the bench flags' and
// those of an experiment file (one set: the bench command pre-fills its
// flags with them; cmd/joulemark TestBenchSharedDefaults).
func Defaults() Config {
	return Config{
		Endpoint:       "completions",
		WarmupRequests: 8,
		IdleDuration:   20 * time.Second,
		MaxLag:         50 * time.Millisecond,
		Workload: Workload{
			MeanInputTokens: 550, StddevInputTokens: 150,
			MeanOutputTokens: 150, StddevOutputTokens: 10,
		},
		Engine: EngineConfig{
			ReadyTimeout: 10 * time.Minute,
			StopGrace:    30 * time.Second,
			ReleaseWait:  30 * time.Minute,
			// MetricsInterval is that of the engine metrics scrape.
			MetricsInterval: 5 * time.Second,
		},
		ExporterHTTP: config.DefaultHTTPClientConfig,
		TargetHTTP:   config.DefaultHTTPClientConfig,
		Timeouts:     Timeouts{Connect: 10 * time.Second, Idle: time.Minute, Drain: 30 * time.Second},
		Prometheus:   Prometheus{HTTP: config.DefaultHTTPClientConfig, Lookback: 90 * 24 * time.Hour},
		RemoteWrite: RemoteWrite{HTTP: config.DefaultHTTPClientConfig,
			AggregateInterval: 5 * time.Second, FlushTimeout: 30 * time.Second},
		RunsDir: "runs",
	}
}

// ErrInvalidConfig is wrapped by every error of Validate (the CLI maps it
// to the bad-usage exit status).
var ErrInvalidConfig = errors.New("invalid bench config")

// Validate fills the load defaults (DefaultConcurrency when no load shape
// is given, DefaultFormalRequests when nothing bounds the formal phase),
// then checks the config before any work starts, without touching the
// disk or the network (files and endpoints are checked when the run is
// prepared); the error lists every problem found, each naming its field.
func (c *Config) Validate() error {
	c.applyLoadDefaults()
	var p problems
	c.checkTarget(&p)
	c.checkLoad(&p)
	c.checkBounds(&p)
	c.checkWorkload(&p)
	c.checkRequestOptions(&p)
	c.checkEngine(&p)
	c.checkEndpoints(&p)
	c.checkArchive(&p)
	if len(p) > 0 {
		return fmt.Errorf("%w: %w", ErrInvalidConfig, errors.Join(p...))
	}
	return nil
}

// problems collects Validate's findings, each prefixed with its field.
type problems []error

func (p *problems) add(field, format string, a ...any) {
	*p = append(*p, fmt.Errorf("%s: %s", field, fmt.Sprintf(format, a...)))
}

// httpURL reports whether s is an absolute http(s) URL with a host.
func httpURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

// checkTarget: the engine's URL and endpoint.
func (c *Config) checkTarget(p *problems) {
	if c.Target == "" {
		p.add("target", "required (OpenAI base URL, e.g. http://host:8000/v1)")
	} else if !httpURL(c.Target) {
		p.add("target", "%q is not an http(s) URL", secretfile.RedactURL(c.Target))
	}
	switch c.Endpoint {
	case "completions", "chat":
	default:
		p.add("endpoint", "%q: want completions or chat", c.Endpoint)
	}
}

// open reports whether the load is an open loop (rate, rate sweep or trace).
func (c *Config) open() bool {
	return c.Rate > 0 || len(c.SweepRate) > 0 || c.Workload.Trace != ""
}

// checkLoad: the load shape, closed or open loop, and the sweeps.
func (c *Config) checkLoad(p *problems) {
	c.checkSweeps(p)
	if c.Concurrency < 0 {
		p.add("concurrency", "%d must not be negative", c.Concurrency)
	}
	if c.Concurrency > ConcurrencyLimit || c.MaxConcurrency > ConcurrencyLimit {
		p.add("concurrency", "%d requests in flight: at most %d", max(c.Concurrency, c.MaxConcurrency), ConcurrencyLimit)
	}
	checkRate(p, "rate", c.Rate)
	open := c.open()
	closed := c.Concurrency > 0 || len(c.SweepConcurrency) > 0
	switch {
	case open && closed:
		p.add("concurrency", "closed loop (concurrency) and open loop (rate or trace) exclude each other; use max_concurrency to cap an open loop")
	case !open && !closed:
		p.add("concurrency", "set concurrency (closed loop), rate (open loop) or a trace")
	}
	switch b := c.Burstiness; {
	case !finite(b):
		p.add("burstiness", "%g is not a finite number", b)
	case b < 0 || (b > 0 && !open):
		p.add("burstiness", "%g: positive, and only with rate (1 is Poisson)", b)
	case b > 0 && (b < MinBurstiness || b > MaxBurstiness):
		p.add("burstiness", "%g: want %g to %g (1 is Poisson)", b, MinBurstiness, MaxBurstiness)
	}
	if c.MaxConcurrency < 0 || (c.MaxConcurrency > 0 && !open) {
		p.add("max_concurrency", "%d: positive, and only caps an open loop", c.MaxConcurrency)
	}
	if c.Workload.Trace != "" && c.Rate > 0 {
		p.add("workload.trace", "a trace sets its own arrival times; drop rate")
	}
}

// Bounds of an open loop's rate (requests per second) and burstiness (the
// gamma shape): outside them the arrival gaps overflow a time.Duration or
// collapse to nothing.
const (
	MinRate       = 1e-4
	MaxRate       = 1e6
	MinBurstiness = 1e-3
	MaxBurstiness = 1e3
)

// checkRate: a rate is 0 (none), or finite within [MinRate, MaxRate].
func checkRate(p *problems, field string, r float64) {
	switch {
	case !finite(r):
		p.add(field, "%g is not a finite number", r)
	case r < 0:
		p.add(field, "%g must not be negative", r)
	case r > 0 && (r < MinRate || r > MaxRate):
		p.add(field, "%.3g requests/s: want %g to %g", r, MinRate, MaxRate)
	}
}

func finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }

func (c *Config) checkSweeps(p *problems) {
	if c.Repeat < 0 || c.Repeat > MaxRepeat {
		p.add("repeat", "%d: want 0 to %d", c.Repeat, MaxRepeat)
	}
	for i, n := range c.SweepConcurrency {
		if n <= 0 || n > ConcurrencyLimit {
			p.add("sweep_concurrency", "value %d (#%d) must be from 1 to %d", n, i+1, ConcurrencyLimit)
		}
	}
	for i, r := range c.SweepRate {
		if r <= 0 {
			p.add("sweep_rate", "value %g (#%d) must be positive", r, i+1)
		} else {
			checkRate(p, fmt.Sprintf("sweep_rate #%d", i+1), r)
		}
	}
	if len(c.SweepConcurrency) > 0 && len(c.SweepRate) > 0 {
		p.add("sweep_concurrency", "sweep over concurrency or rate, not both")
	}
	if n := (len(c.SweepConcurrency) + len(c.SweepRate)) * max(c.Repeat, 1); n > MaxRuns {
		field := "sweep_concurrency"
		if len(c.SweepRate) > 0 {
			field = "sweep_rate"
		}
		p.add(field, "%d sweep values × repeat %d is %d runs, more than the %d allowed", len(c.SweepConcurrency)+len(c.SweepRate), max(c.Repeat, 1), n, MaxRuns)
	}
}

// MaxRuns is the most runs one bench makes of its sweep values times its
// repeat (the experiment file's cap, experiment.MaxRuns, is the same).
const MaxRuns = 10000

// checkBounds: what ends the phases, and the periods.
func (c *Config) checkBounds(p *problems) {
	if c.Requests < 0 {
		p.add("requests", "%d must not be negative", c.Requests)
	}
	if c.Duration < 0 {
		p.add("duration", "%s must not be negative", c.Duration)
	}
	if c.Requests == 0 && c.Duration == 0 && c.Workload.Trace == "" {
		p.add("requests", "set requests and/or duration (or a trace, which ends by itself)")
	}
	if c.WarmupRequests < 0 {
		p.add("warmup_requests", "%d must not be negative", c.WarmupRequests)
	}
	if c.IdleDuration < 0 {
		p.add("idle_duration", "%s must not be negative", c.IdleDuration)
	}
	if c.MaxLag < 0 {
		p.add("max_lag", "%s must not be negative", c.MaxLag)
	}
	if c.Engine.MetricsInterval <= 0 {
		p.add("engine.metrics_interval", "%s must be positive", c.Engine.MetricsInterval)
	}
	if c.RemoteWrite.AggregateInterval <= 0 {
		p.add("remote_write.aggregate_interval", "%s must be positive", c.RemoteWrite.AggregateInterval)
	}
	if c.RemoteWrite.FlushTimeout <= 0 {
		p.add("remote_write.flush_timeout", "%s must be positive", c.RemoteWrite.FlushTimeout)
	}
}

// checkWorkload: what is sent. The dataset and trace files are read when
// the run is prepared.
func (c *Config) checkWorkload(p *problems) {
	w := c.Workload
	if w.Dataset != "" && w.Trace != "" {
		p.add("workload.dataset", "a dataset and a trace exclude each other")
	}
	if w.Dataset == "" && w.Trace == "" {
		if w.MeanInputTokens <= 0 && w.Kind != contract.WorkloadCorrectness {
			p.add("workload.mean_input_tokens", "%d must be positive", w.MeanInputTokens)
		}
		// correctness: the answers' max_tokens
		if w.MeanOutputTokens <= 0 {
			p.add("workload.mean_output_tokens", "%d must be positive", w.MeanOutputTokens)
		}
	}
	if w.StddevInputTokens < 0 || w.StddevOutputTokens < 0 {
		p.add("workload.stddev_input_tokens", "standard deviations must not be negative")
	}
	switch w.Kind {
	case "", contract.WorkloadSynthetic:
	case contract.WorkloadCorrectness:
		if w.Dataset != "" || w.Trace != "" {
			p.add("workload.kind", "correctness generates its own prompts: no dataset or trace")
		}
	default:
		p.add("workload.kind", "%q: want synthetic or correctness", w.Kind)
	}
}

// checkRequestOptions: timeouts and sampling extras of each request.
func (c *Config) checkRequestOptions(p *problems) {
	if c.Timeouts.Connect < 0 || c.Timeouts.FirstToken < 0 || c.Timeouts.Total < 0 || c.Timeouts.Idle < 0 || c.Timeouts.Drain < 0 {
		p.add("timeouts", "must not be negative")
	}
	if t := c.Extras.Temperature; t != nil && (!finite(*t) || *t < 0) {
		p.add("extras.temperature", "%g: want a finite number, not negative", *t)
	}
	if c.Extras.MinTokens != nil && *c.Extras.MinTokens < 0 {
		p.add("extras.min_tokens", "%d must not be negative", *c.Extras.MinTokens)
	}
	if c.Extras.MaxTokens != nil && *c.Extras.MaxTokens <= 0 {
		p.add("extras.max_tokens", "%d must be positive", *c.Extras.MaxTokens)
	}
}

// checkEngine: how the engine's lifecycle is driven.
func (c *Config) checkEngine(p *problems) {
	e := c.Engine
	switch {
	case e.NoLifecycle && (e.Cmd != "" || e.Start != "" || e.Stop != ""):
		p.add("engine.no_lifecycle", "measures an already running service: drop engine.cmd/start/stop")
	case e.QuietWindow < 0 || e.QuietWindow > 0 && !e.NoLifecycle:
		p.add("engine.quiet_window", "%s: positive, and only with engine.no_lifecycle (a cold start has its idle phase)", e.QuietWindow)
	case e.Cmd != "" && (e.Start != "" || e.Stop != ""):
		p.add("engine.cmd", "launch a command or use start/stop hooks, not both")
	case (e.Start == "") != (e.Stop == ""):
		p.add("engine.start", "start and stop hooks go together")
	}
	if e.NoLifecycle && c.Repeat > 1 {
		p.add("repeat", "%d repetitions with engine.no_lifecycle (--engine.no-lifecycle): a repetition is a cold lifecycle (idle, startup, formal, release), which an attached engine does not have; start the engine from the bench (engine.cmd or engine.start/stop), or run attached benches one by one", c.Repeat)
	}
	if e.ReadyTimeout <= 0 {
		p.add("engine.ready_timeout", "%s must be positive", e.ReadyTimeout)
	}
	if e.StopGrace < 0 || e.ReleaseWait < 0 {
		p.add("engine.stop_grace", "durations must not be negative")
	}
}

// checkEndpoints: the exporters and the GPUs they measure, the
// remote-write target and the engine's metrics URL (their syntax; they are
// reached when the run is prepared).
func (c *Config) checkEndpoints(p *problems) {
	for i, x := range c.Exporters {
		if !httpURL(x) {
			p.add("exporters", "#%d %q is not an http(s) URL", i+1, secretfile.RedactURL(x))
		}
	}
	c.checkSelector(p)
	if rw := c.RemoteWrite; rw.URL != "" {
		if !httpURL(rw.URL) {
			p.add("remote_write.url", "%q is not an http(s) URL", secretfile.RedactURL(rw.URL))
		}
		if err := rw.HTTP.Validate(); err != nil {
			p.add("remote_write.http", "%v", err)
		}
	}
	if err := c.ExporterHTTP.Validate(); err != nil {
		p.add("exporter_http", "%v", err)
	}
	if err := c.TargetHTTP.Validate(); err != nil {
		p.add("target_http", "%v", err)
	}
	if a := clientflags.AuthSection(c.TargetHTTP); a != "" && c.APIKeyFile != "" {
		p.add("api_key_file", "conflicts with target_http.%s: give one", a)
	}
	if pr := c.Prometheus; pr.URL != "" {
		if !httpURL(pr.URL) {
			p.add("prometheus.url", "%q is not an http(s) URL", secretfile.RedactURL(pr.URL))
		}
		if err := pr.HTTP.Validate(); err != nil {
			p.add("prometheus.http", "%v", err)
		}
		if pr.Lookback <= 0 {
			p.add("prometheus.lookback", "%s must be positive", pr.Lookback)
		}
	}
	if c.Engine.MetricsURL != "" {
		if u, err := url.Parse(c.Engine.MetricsURL); err != nil || u.Host == "" {
			p.add("engine.metrics_url", "%q is not a URL", secretfile.RedactURL(c.Engine.MetricsURL))
		}
	}
}

// checkSelector: which GPUs the exporters measure.
func (c *Config) checkSelector(p *problems) {
	pod := c.Engine.Pod
	if len(c.ExporterGPUs) > 0 && pod != "" {
		p.add("gpus", "give gpus or engine.pod, not both")
	}
	if _, _, _, err := phaseapi.ParsePodPattern(pod); pod != "" && err != nil {
		p.add("engine.pod", "%q: want namespace/name or namespace/name-prefix*", pod)
	}
	for i, u := range c.ExporterGPUs {
		if !strings.HasPrefix(u, "GPU-") && !strings.HasPrefix(u, "MIG-") {
			p.add("gpus", "#%d %q is not a GPU UUID (GPU-…)", i+1, u)
		}
	}
}

// checkArchive: where the run is kept and under which id (contract.RunIDGrammar,
// for each sweep point's id too).
func (c *Config) checkArchive(p *problems) {
	if c.RunsDir == "" {
		p.add("runs_dir", "required")
	}
	if c.RunID == "" {
		return
	}
	if err := contract.ValidateRunID(c.RunID); err != nil {
		p.add("run_id", "%v", err)
		return
	}
	for _, pt := range runPoints(*c) {
		if err := contract.ValidateRunID(pt.RunID); err != nil {
			p.add("run_id", "%s: %v", pt.repetition.kind(), err)
			return
		}
	}
}
