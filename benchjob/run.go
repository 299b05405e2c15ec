package benchjob

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/joulemark/joulemark/benchjob/openai"
	"github.com/joulemark/joulemark/benchjob/quality"
	"github.com/joulemark/joulemark/internal/clientflags"
	"github.com/joulemark/joulemark/internal/contract"
	"github.com/joulemark/joulemark/internal/ctxtime"
	"github.com/joulemark/joulemark/internal/phaseapi"
	"github.com/joulemark/joulemark/internal/remotewrite"
	"github.com/joulemark/joulemark/internal/runarchive"
	"github.com/joulemark/joulemark/internal/secretfile"
)

// Options are what a caller of Run provides beside the Config.
type Options struct {
	Logger *slog.Logger
	// Engine overrides the controller built from Config.Engine (the demo's
	// in-process simulated engine).
	Engine Engine
	// Progress is where the progress bar goes; nil: stderr when it is a
	// terminal, else periodic log lines.
	Progress io.Writer
	// ExporterHTTP is the HTTP client for the phase API (TLS); nil: default.
	ExporterHTTP *http.Client
	// PollInterval is the readiness and release polling period (default 1s).
	PollInterval time.Duration
	// Archive is the run's directory when the caller created it (the demo
	// does, to keep its Prometheus data inside the run); its ID must be
	// the config's run_id. Nil: Run creates <runs_dir>/<run_id>.
	Archive *runarchive.Run
	// PhaseRetry bounds the retries of one exporter call (default 1m).
	PhaseRetry time.Duration
	// HardStop, canceled, stops the run at once (the second Ctrl-C; the
	// first one cancels Run's context: a graceful stop). Nil: none.
	HardStop context.Context

	// wrapRequests, in tests, wraps the requests file's writer (a failing
	// disk).
	wrapRequests func(io.Writer) io.Writer
}

// Result is what a run did.
type Result struct {
	RunID      string   `json:"run_id"`
	ArchiveDir string   `json:"archive_dir"`
	Status     string   `json:"status"`
	Error      string   `json:"error,omitempty"`
	Flags      []string `json:"flags"`
	Model      string   `json:"model"`

	Warmup  runarchive.Summary `json:"warmup"`
	Summary runarchive.Summary `json:"formal"`

	TargetRate   float64 `json:"target_rate"`
	AchievedRate float64 `json:"achieved_rate"`

	RemoteWriteURL string `json:"remote_write_url,omitempty"`
	// PrometheusURL is the Prometheus the run id was checked against
	// (bench --prometheus.url), named in the next command to run.
	PrometheusURL string            `json:"prometheus_url,omitempty"`
	RemoteWrite   remotewrite.Stats `json:"remote_write"`

	// Release is each exporter's final run status, by base URL.
	Release map[string]*phaseapi.RunStatus `json:"release"`

	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
}

// ErrArchiveWrite is wrapped by Run's error when the run archive could not
// be written (a full disk): the load stopped at the first write error.
var ErrArchiveWrite = errors.New("archive write failed")

// ErrAborted is wrapped by Run's error when the context was canceled.
var ErrAborted = errors.New("run aborted")

type runner struct {
	cfg   Config
	opts  Options
	log   *slog.Logger
	runID string
	rec   *recorder // archive, aggregates, remote write, records

	client    *openai.Client
	model     string
	src       *source
	trace     []traceEntry
	exporters []*phaseapi.Client
	slots     slots
	progress  *progress
	engine    Engine
	engLog    *os.File
	inFlight  atomic.Int64 // requests running

	crash  crashes         // the first recovered panic (crash.go)
	asked  serverWait      // the pause a Retry-After asked for (retryafter.go)
	reqCtx context.Context // the requests' context (stop.go)

	engineName    string // the served model's owned_by (vllm, sglang, …)
	datasetDigest string // workloadDigest

	mu          sync.Mutex
	stopping    bool
	engineErr   error
	formalStart time.Time
	posted      bool // a phase was posted: the GPU selector went with the first
	// selPending are the exporters (by base URL) whose run waits for the
	// engine's pod: later phases carry the selector again until it resolves.
	selPending map[string]bool
}

// Run executes one benchmark run: the whole lifecycle (or the formal phase
// alone with engine.no_lifecycle), with its archive in
// <runs_dir>/<run_id>/. It returns a Result whenever the archive was
// created, also together with an error (aborted, engine not ready, ...).
func Run(ctx context.Context, cfg Config, opts Options) (*Result, error) {
	if len(cfg.SweepConcurrency) > 0 || len(cfg.SweepRate) > 0 || cfg.Repeat > 1 {
		return nil, errors.New("bench config has a sweep or a repeat: run it with Sweep")
	}
	if err := cfg.Validate(); err != nil {
		return nil, cfg.secrets().Error(err)
	}
	if cfg.RunID == "" {
		cfg.RunID = contract.NewRunID()
	}
	return runValidated(ctx, cfg, opts)
}

// runValidated runs one validated run (no sweep) with its run id set: Run
// and Sweep, the entry points, make a fresh id when none was given.
// Both keep the secrets of the config's URLs out of their log and errors.
func runValidated(ctx context.Context, cfg Config, opts Options) (*Result, error) {
	ss := cfg.secrets()
	opts.Logger = ss.Logger(opts.withDefaults().Logger)
	r, err := prepare(ctx, cfg, opts)
	if err != nil {
		return nil, ss.Error(err)
	}
	res, err := r.run(ctx)
	return res, ss.Error(err)
}

// prepare does everything that can fail before a run starts: secrets,
// workload files, exporters, remote write, the archive directory.
func prepare(ctx context.Context, cfg Config, opts Options) (*runner, error) {
	opts = opts.withDefaults()
	engine, err := engineFor(cfg.Engine, opts.Engine)
	if err != nil {
		return nil, err
	}
	apiKey, err := targetKey(&cfg)
	if err != nil {
		return nil, err
	}
	token, err := readSecret(cfg.ExporterTokenFile, "JOULEMARK_API_TOKEN", "exporter_token_file")
	if err != nil {
		return nil, err
	}
	r := &runner{cfg: cfg, opts: opts, log: opts.Logger, engine: engine, model: cfg.Model}
	if r.src, r.trace, err = workloadSource(cfg.Workload); err != nil {
		return nil, err
	}
	if r.datasetDigest, err = workloadDigest(cfg.Workload); err != nil {
		return nil, err
	}
	if r.client, err = targetClient(&cfg, apiKey); err != nil {
		return nil, err
	}
	reapOrphans(cfg.RunsDir, opts.Logger)
	// Pre-flight: everything answers and accepts the run's credentials, and
	// the run id is free everywhere, before the run directory exists.
	if r.exporters, err = exporterClients(&cfg, token, opts.ExporterHTTP); err != nil {
		return nil, err
	}
	if _, err := os.Stat(filepath.Join(cfg.RunsDir, cfg.RunID)); err == nil && opts.Archive == nil {
		return nil, fmt.Errorf("run %q in %s: %w (never overwritten: give a new --run-id)", cfg.RunID, cfg.RunsDir, runarchive.ErrExists)
	}
	r.runID = cfg.RunID
	gpus, err := r.preflight(ctx)
	if err != nil {
		return nil, err
	}
	if err := r.openArchive(ctx, gpus); err != nil {
		return nil, err
	}
	r.progress = newProgress(opts.Progress, r.log)
	return r, nil
}

// withDefaults fills the options left zero.
func (o Options) withDefaults() Options {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.PollInterval <= 0 {
		o.PollInterval = time.Second
	}
	if o.PhaseRetry <= 0 {
		o.PhaseRetry = time.Minute
	}
	return o
}

// engineFor is the run's engine controller: custom (the caller's), a
// process (engine.cmd), hooks (engine.start/stop), or none with
// engine.no_lifecycle.
func engineFor(e EngineConfig, custom Engine) (Engine, error) {
	switch {
	case custom != nil && e.NoLifecycle:
		return nil, errors.New("engine.no_lifecycle and an engine controller exclude each other")
	case custom != nil && (e.Cmd != "" || e.Start != ""):
		return nil, errors.New("engine.cmd/start given together with an engine controller")
	case custom != nil:
		return custom, nil
	case e.Cmd != "":
		return NewProcessEngine(e.Cmd, e.StopGrace), nil
	case e.Start != "":
		return &HookEngine{StartCmd: e.Start, StopCmd: e.Stop}, nil
	case !e.NoLifecycle:
		return nil, errors.New("engine: give engine.cmd, engine.start/engine.stop, or engine.no_lifecycle")
	}
	return nil, nil
}

// workloadSource is the run's prompt source (a trace, a dataset, the
// correctness workload or synthetic prompts) with the rubric of
// workload.quality_file applied; trace is the trace, nil without one.
func workloadSource(w Workload) (src *source, trace []traceEntry, err error) {
	synth := newSynthetic(w)
	cycle := 0 // a dataset's length: prompt i is its line i % cycle
	switch {
	case w.Trace != "":
		if trace, err = loadTrace(w.Trace); err != nil {
			return nil, nil, err
		}
		// Warm-up prompts come from the synthetic generator; the trace
		// drives the formal phase.
		src = newSource(func(i int) Prompt {
			e := trace[i]
			return Prompt{Text: synth.build(e.InputTokens, e.OutputTokens), InputTokens: e.InputTokens, MaxTokens: e.OutputTokens}
		}, len(trace))
	case w.Dataset != "":
		ds, err := loadDataset(w.Dataset, w.MeanOutputTokens)
		if err != nil {
			return nil, nil, err
		}
		src = newSource(func(i int) Prompt { return ds[i%len(ds)] }, -1)
		cycle = len(ds)
	case w.Kind == contract.WorkloadCorrectness:
		maxTokens := w.MeanOutputTokens
		if maxTokens <= 0 {
			maxTokens = 64
		}
		src = newSource(func(i int) Prompt {
			text, check := quality.CorrectnessPrompt(w.Seed, i)
			return Prompt{Text: text, InputTokens: estimateTokens(text), MaxTokens: maxTokens, Check: check}
		}, -1)
	default:
		src = newSource(synth.prompt, -1)
	}
	if w.QualityFile != "" {
		if err := applyRubric(src, w.QualityFile, cycle); err != nil {
			return nil, nil, err
		}
	}
	return src, trace, nil
}

// applyRubric checks every prompt of src against the rubric in file, by
// prompt index (modulo cycle, a dataset's length, when > 0).
func applyRubric(src *source, file string, cycle int) error {
	rubric, err := quality.LoadRubric(file)
	if err != nil {
		return err
	}
	gen := src.gen
	src.gen = func(i int) Prompt {
		p := gen(i)
		at := i
		if cycle > 0 {
			at = i % cycle
		}
		p.Check = mergeChecks(p.Check, rubric.For(at))
		return p
	}
	return nil
}

// targetClient is the engine's OpenAI-compatible client.
func targetClient(cfg *Config, apiKey string) (*openai.Client, error) {
	return openai.New(openai.Config{
		BaseURL: cfg.Target, APIKey: apiKey, HTTP: cfg.TargetHTTP,
		ConnectTimeout: cfg.Timeouts.Connect, FirstTokenTimeout: cfg.Timeouts.FirstToken, TotalTimeout: cfg.Timeouts.Total,
		IdleTimeout: cfg.Timeouts.Idle,
		MaxConns:    max(cfg.Concurrency, cfg.MaxConcurrency, 64), RequireUsage: cfg.RequireUsage,
	})
}

// reapOrphans kills the engines left by killed runs in runsDir: they would
// hold the GPUs and the target's address.
func reapOrphans(runsDir string, log *slog.Logger) {
	if ids, err := ReapOrphanEngines(runsDir); err != nil {
		log.Warn("reaping engines of killed runs", "err", err)
	} else if len(ids) > 0 {
		log.Warn("killed the engine process groups left by killed runs (finish them with joulemark runs finalize)", "runs", strings.Join(ids, ","))
	}
}

// exporterClients are the phase API clients of the run's exporters; hc,
// when not nil, replaces the HTTP client cfg.ExporterHTTP would build.
func exporterClients(cfg *Config, token string, hc *http.Client) ([]*phaseapi.Client, error) {
	clients, err := phaseapi.NewClients(cfg.ExporterHTTP, token, "joulemark-bench", exporterCallTimeout, hc)
	if err != nil {
		return nil, fmt.Errorf("exporter_http: %w", err)
	}
	var out []*phaseapi.Client
	for _, u := range cfg.Exporters {
		c, err := clients.Client(u)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// openArchive creates the run's recorder (archive, remote write) and
// writes config.yaml and the first manifest.
func (r *runner) openArchive(ctx context.Context, gpus map[string][]phaseapi.GPUInfo) error {
	cfg, e := r.cfg, r.cfg.Engine
	rec, err := openRecorder(&cfg, r.opts)
	if err != nil {
		return err
	}
	r.rec, r.runID = rec, rec.runID
	cy, cm, err := configYAML(&r.cfg)
	if err == nil {
		err = rec.arch.WriteFile(runarchive.ConfigFile, cy)
	}
	if err != nil {
		rec.reqs.Close()
		return err
	}
	rec.man = runarchive.Manifest{
		RunID: r.runID, Status: runarchive.StatusRunning, Config: cm, ConfigSHA256: sha256Hex(cy),
		Joulemark: joulemarkInfo(), Git: gitInfo(ctx), Host: hostInfo(), GPUs: gpus, Bench: benchProcess(),
		Engine: runarchive.EngineInfo{Cmd: e.Cmd, StartHook: e.Start, StopHook: e.Stop, Version: e.Version, Image: e.Image,
			Model: cfg.Model, ModelRevision: e.ModelRevision, Target: secretfile.RedactURL(cfg.Target), Controller: controllerName(r.engine, r.opts.Engine)},
		Thinking: thinking(&cfg), Load: loadInfo(&cfg),
		Created: unixSeconds(time.Now()), Phases: map[string]float64{},
	}
	if err := rec.writeManifest(); err != nil {
		rec.reqs.Close()
		return err
	}
	return nil
}

func controllerName(e, custom Engine) string {
	switch {
	case e == nil:
		return "none"
	case custom != nil:
		return "custom"
	}
	if _, ok := e.(*ProcessEngine); ok {
		return "process"
	}
	return "hooks"
}

func loadInfo(c *Config) runarchive.LoadInfo {
	l := runarchive.LoadInfo{Concurrency: c.Concurrency, TargetRate: c.Rate, Burstiness: c.Burstiness, MaxConcurrency: c.MaxConcurrency}
	switch {
	case c.Workload.Trace != "":
		l.Mode = "trace"
	case c.Rate > 0 && c.Burstiness > 0 && c.Burstiness != 1:
		l.Mode = "gamma"
	case c.Rate > 0:
		l.Mode = "poisson"
	default:
		l.Mode = "closed"
	}
	return l
}

// targetKey is the engine's API key: api_key_file's content, else env
// OPENAI_API_KEY unless target_http has its own authorization.
func targetKey(cfg *Config) (string, error) {
	if cfg.APIKeyFile == "" && clientflags.AuthSection(cfg.TargetHTTP) != "" {
		return "", nil
	}
	return readSecret(cfg.APIKeyFile, "OPENAI_API_KEY", "api_key_file")
}

// readSecret reads a secret from file (trimmed), else from env.
func readSecret(file, env, field string) (string, error) {
	if file != "" {
		return secretfile.ReadToken(file, field)
	}
	if env != "" {
		return secretfile.Env(env)
	}
	return "", nil
}

// flag raises run flag f (recorder.flag).
func (r *runner) flag(f string) { r.rec.flag(f) }

// record keeps one finished request (recorder.record) and counts it in
// the progress. It takes rec over.
func (r *runner) record(rec *runarchive.Request) {
	r.rec.record(rec)
	r.progress.done.Add(1)
	if !rec.Success {
		r.progress.errors.Add(1)
	} else {
		r.progress.tokens.Add(int64(rec.OutputTokens))
		if rec.TokensSource != runarchive.TokensUsage {
			r.flag(contract.FlagUsageMissing)
		}
	}
}

func (r *runner) run(ctx context.Context) (*Result, error) {
	start := time.Now()
	r.log.Info("bench run starting", "run_id", r.runID, "archive", r.rec.arch.Dir, "target", secretfile.RedactURL(r.cfg.Target))
	r.progress.start()
	aggDone := make(chan struct{})
	aggStopped := make(chan struct{})
	go func() {
		defer close(aggStopped)
		defer r.guard("the aggregates push")
		r.rec.pushAggregates(aggDone, r.cfg.RemoteWrite.AggregateInterval, r.rateGauges)
	}()
	go func() {
		defer r.guard("the archive flush")
		r.rec.flushEvery(aggDone, time.Second)
	}()
	runCtx, cancelDispatch := context.WithCancelCause(ctx)
	defer cancelDispatch(nil)
	reqCtx, cancelReq, releaseStop := r.armStop(ctx)
	defer releaseStop()
	r.reqCtx = reqCtx
	cancelRun := func(err error) { cancelDispatch(err); cancelReq(err) }
	r.crash.setCancel(cancelRun)
	r.rec.reqs.OnError(func(err error) {
		// Going on would load the engine for a run nothing records.
		err = fmt.Errorf("%w: run archive %s could not be written: %w", ErrArchiveWrite, r.rec.arch.Dir, err)
		r.log.Error("stopping the load", "err", err)
		cancelRun(err)
	})
	var scrapeWG sync.WaitGroup
	stopScrape := make(chan struct{})
	if r.cfg.Engine.Metrics {
		scrapeWG.Add(1)
		go func() {
			defer scrapeWG.Done()
			defer r.guard("the engine metrics scrape")
			r.scrapeEngineMetrics(stopScrape)
		}()
	}

	err := r.safeLifecycle(runCtx, cancelRun)
	status := runarchive.StatusCompleted
	switch {
	case ctx.Err() != nil:
		status = runarchive.StatusAborted
		r.flag(contract.FlagAborted)
		err = fmt.Errorf("run %s: %w (%v); records kept in %s", r.runID, ErrAborted, context.Cause(ctx), r.rec.arch.Dir)
	case err != nil:
		status = runarchive.StatusFailed
	}
	r.teardown(ctx, err == nil)
	close(stopScrape)
	scrapeWG.Wait()
	r.progress.close()
	close(aggDone)
	<-aggStopped
	return r.finish(start, status, err)
}

// lifecycle runs idle → startup → readiness → identity → warm-up → formal.
func (r *runner) lifecycle(ctx context.Context, cancelRun context.CancelCauseFunc) error {
	if w := r.cfg.steadyStateWarning(); w != "" {
		r.log.Warn(w)
	}
	if err := r.startEngine(ctx, cancelRun); err != nil {
		return err
	}
	t0 := time.Now()
	if err := r.waitReady(ctx); err != nil {
		return r.engineCause(ctx, err)
	}
	r.rec.man.Engine.ReadySeconds = time.Since(t0).Seconds()
	if err := r.identify(ctx); err != nil {
		return err
	}
	if err := r.warmup(ctx); err != nil {
		return err
	}
	return r.formal(ctx)
}

// startEngine runs the idle baseline and starts the engine (startup);
// with engine.no_lifecycle, only the quiet window (idle phase) before the
// load, if any.
func (r *runner) startEngine(ctx context.Context, cancelRun context.CancelCauseFunc) error {
	if r.cfg.Engine.NoLifecycle {
		r.flag(contract.FlagNoLifecycle)
		if q := r.cfg.Engine.QuietWindow; q > 0 {
			// the running engine without load from the bench
			r.postPhase(contract.Idle)
			r.log.Info("quiet window before the load (the engine keeps running)", "duration", q)
			return ctxtime.Sleep(ctx, q)
		}
		return nil
	}
	r.postPhase(contract.Idle)
	r.log.Info("idle baseline", "duration", r.cfg.IdleDuration)
	if err := ctxtime.Sleep(ctx, r.cfg.IdleDuration); err != nil {
		return err
	}
	r.postPhase(contract.Startup)
	if lc, ok := r.engine.(LogCapturer); ok {
		f, err := r.rec.arch.CreateFile(runarchive.EngineLogFile)
		if err != nil {
			return err
		}
		r.engLog = f
		lc.CaptureLogs(&syncWriter{w: f})
	}
	if pe, ok := r.engine.(*ProcessEngine); ok {
		pe.PIDFile = r.rec.arch.Path(EnginePIDFile)
	}
	if err := r.engine.Start(ctx); err != nil {
		r.flag(contract.FlagEngineStart)
		return fmt.Errorf("starting the engine: %w", err)
	}
	if w, ok := r.engine.(Watcher); ok {
		go r.watchEngine(ctx, w, cancelRun)
	}
	return nil
}

// watchEngine stops the run when the engine exits before the bench stops
// it.
func (r *runner) watchEngine(ctx context.Context, w Watcher, cancelRun context.CancelCauseFunc) {
	select {
	case <-w.Exited():
	case <-ctx.Done():
		return
	}
	r.mu.Lock()
	stopping := r.stopping
	r.engineErr = w.ExitErr()
	r.mu.Unlock()
	if !stopping {
		r.flag(contract.FlagEngineExited)
		r.log.Error("engine exited during the run", "err", w.ExitErr())
		cancelRun(fmt.Errorf("engine exited: %w", w.ExitErr()))
	}
}

// warmup runs the warm-up phase (none with engine.no_lifecycle); a trace
// run warms up on synthetic prompts, hashed apart.
func (r *runner) warmup(ctx context.Context) error {
	if r.cfg.Engine.NoLifecycle || r.cfg.WarmupRequests <= 0 {
		return nil
	}
	eff := max(1, r.cfg.Concurrency, r.cfg.MaxConcurrency)
	if err := r.postPhase(contract.Warmup); err != nil {
		return err
	}
	r.progress.reset(string(contract.Warmup), r.cfg.WarmupRequests)
	src := r.src
	if r.trace != nil {
		// The trace is the formal load: warm up on synthetic prompts.
		r.src = newSource(newSynthetic(r.cfg.Workload).prompt, -1)
	}
	r.runLoad(ctx, loadSpec{phase: string(contract.Warmup), requests: r.cfg.WarmupRequests,
		concurrency: min(r.cfg.WarmupRequests, eff)})
	if r.trace != nil {
		r.rec.man.WarmupPromptSetSHA256, r.rec.man.WarmupPrompts = r.src.digest()
		r.src = src
	}
	return r.engineCause(ctx, ctx.Err())
}

// formal runs the formal phase and records how well the load was held.
func (r *runner) formal(ctx context.Context) error {
	if err := r.postPhase(contract.Formal); err != nil {
		return err
	}
	r.progress.reset(string(contract.Formal), r.cfg.Requests)
	spec := loadSpec{phase: string(contract.Formal), requests: r.cfg.Requests, duration: r.cfg.Duration,
		concurrency: r.cfg.Concurrency, rate: r.cfg.Rate, burstiness: r.cfg.Burstiness,
		maxConc: r.cfg.MaxConcurrency, trace: r.trace, seed: r.cfg.Workload.Seed}
	r.clampConcurrency(spec)
	cpu0 := cpuTime()
	r.mu.Lock()
	r.formalStart = time.Now()
	r.mu.Unlock()
	wctx, stopWatch := context.WithCancel(ctx)
	go r.watchFormalRate(wctx, time.Now())
	st := r.runLoad(ctx, spec)
	stopWatch()
	r.progress.phase.Store("")
	r.noteFormalLoad(st, cpuTime()-cpu0)
	return r.engineCause(ctx, ctx.Err())
}

// noteFormalLoad puts what the formal load did into the manifest (achieved
// rate, lags, client CPU) and flags a load not held.
func (r *runner) noteFormalLoad(st *loadStats, cpu time.Duration) {
	wall := st.end.Sub(st.start).Seconds()
	if wall > 0 {
		r.rec.man.Load.ClientCPURatio = cpu.Seconds() / wall / float64(runtime.GOMAXPROCS(0))
		if r.rec.man.Load.ClientCPURatio > contract.ClientCPUSaturated {
			r.flag(contract.FlagClientCPU)
		}
	}
	r.rec.man.Load.AchievedRate = st.achievedRate()
	r.rec.man.Load.RetryAfterWaitSeconds = st.retryWait.Seconds()
	r.rec.agg.achieved.Set(st.achievedRate())
	if len(st.lags) > 0 {
		p50, p99 := st.lagPercentile(50), st.lagPercentile(99)
		r.rec.man.Load.LagP50Seconds, r.rec.man.Load.LagP99Seconds = p50.Seconds(), p99.Seconds()
		r.rec.man.Load.CapWaitSeconds = st.capWait.Seconds()
		r.rec.man.Load.MaxLagSeconds = r.cfg.MaxLag.Seconds()
		if p99 > r.cfg.MaxLag && r.cfg.MaxLag > 0 {
			r.flag(contract.FlagClientLag)
			r.log.Warn("the client could not keep up with the target arrivals", "lag_p99", p99, "max_lag", r.cfg.MaxLag)
		}
	}
	if st.exhausted && r.trace != nil && (r.cfg.Requests > len(r.trace)) {
		r.flag(contract.FlagTraceExhausted)
	}
}

// engineCause explains err by the engine's death when that is what ended ctx.
func (r *runner) engineCause(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	if c := context.Cause(ctx); c != nil && !errors.Is(c, context.Canceled) {
		return c
	}
	return err
}

// waitReady polls /health then /v1/models until both answer, for at most
// engine.ready_timeout. A server without /health (404) is judged by
// /v1/models alone.
func (r *runner) waitReady(ctx context.Context) error {
	ctx2, cancel := context.WithTimeout(ctx, r.cfg.Engine.ReadyTimeout)
	defer cancel()
	var last error
	t0, said := time.Now(), time.Now()
	for {
		err := r.client.Health(ctx2)
		var se *openai.StatusError
		if err == nil || (errors.As(err, &se) && se.StatusCode == http.StatusNotFound) {
			var models []openai.Model
			models, err = r.client.Models(ctx2)
			if err == nil && len(models) == 0 {
				err = errors.New("GET /v1/models: no model served yet")
			}
			if err == nil {
				return nil
			}
		}
		last = err
		if time.Since(said) >= progressEvery {
			said = time.Now()
			r.log.Info("waiting for the engine to be ready", "target", secretfile.RedactURL(r.cfg.Target), "waited", time.Since(t0).Round(time.Second),
				"max", r.cfg.Engine.ReadyTimeout, "last", err)
		}
		select {
		case <-ctx2.Done():
			if ctx.Err() != nil {
				return ctx.Err()
			}
			r.flag(contract.FlagEngineNotReady)
			return fmt.Errorf("engine not ready after %s at %s: %v", r.cfg.Engine.ReadyTimeout, secretfile.RedactURL(r.cfg.Target), withTargetHint(r.cfg.Target, last))
		case <-time.After(r.opts.PollInterval):
		}
	}
}

// identify checks the served model id (and records max_model_len and the
// engine's version where exposed).
func (r *runner) identify(ctx context.Context) error {
	models, err := r.client.Models(ctx)
	if err != nil {
		return fmt.Errorf("identity check: %w", err)
	}
	var ids []string
	var found *openai.Model
	for i := range models {
		ids = append(ids, models[i].ID)
		if models[i].ID == r.cfg.Model {
			found = &models[i]
		}
	}
	r.rec.man.Engine.ServedModels = ids
	if r.cfg.Model == "" {
		found = &models[0]
		r.model = found.ID
		r.log.Info("no model given: using the first served one", "model", r.model)
	}
	if found == nil {
		r.flag(contract.FlagWrongModel)
		return fmt.Errorf("identity check: %s serves %q, not %q", secretfile.RedactURL(r.cfg.Target), ids, r.cfg.Model)
	}
	r.rec.man.Engine.Model = r.model
	r.rec.man.Engine.MaxModelLen = found.MaxModelLen
	r.engineName = found.OwnedBy
	r.rec.man.Engine.ReportedVer = r.client.Version(ctx)
	return nil
}

// postPhase posts phase p to every exporter, retried with bounded backoff
// (an exporter restarting or a network blip); a failure is flagged and
// logged, and the run goes on (the archive still records everything, and
// the final status check flags the phase as lost). The GPU selector goes
// with the first phase, and with later ones to an exporter whose run
// waits for the engine's pod; the error is such an exporter refusing the
// phase (the pod holds none of its GPUs by the warm-up): the load must
// not start.
func (r *runner) postPhase(p contract.Phase) error {
	now := time.Now()
	r.rec.notePhase(p, now)
	r.mu.Lock()
	first := !r.posted
	r.posted = true
	r.mu.Unlock()
	full := phaseapi.Selector{GPUs: r.cfg.ExporterGPUs, Pod: r.cfg.Engine.Pod}
	var (
		mu      sync.Mutex
		refused []error
	)
	r.log.Info("phase", "run_id", r.runID, "phase", p)
	r.forExporters(func(ctx context.Context, c *phaseapi.Client) error {
		sel := phaseapi.Selector{}
		if first || r.selectorPending(c.BaseURL()) {
			sel = full
		}
		st, err := c.StartPhaseSelect(ctx, r.runID, p, sel)
		switch {
		case err == nil && !sel.Empty():
			r.setSelectorPending(c.BaseURL(), st.SelectorPending)
			if !st.SelectorPending {
				r.rec.setGPUs(c.BaseURL(), st.GPUs) // the GPUs the run measures
			}
		case err != nil && !first && !sel.Empty() && phaseapi.IsStatus(err, http.StatusConflict):
			mu.Lock()
			refused = append(refused, fmt.Errorf("exporter %s: the engine's pod %s holds none of its GPUs at the %s phase; no load was sent: %w", c.BaseURL(), full.Pod, p, err))
			mu.Unlock()
		}
		return err
	}, "posting phase "+string(p))
	return errors.Join(refused...)
}

// selectorPending says the run on exporter u waits for the engine's pod.
func (r *runner) selectorPending(u string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.selPending[u]
}

func (r *runner) setSelectorPending(u string, pending bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.selPending == nil {
		r.selPending = map[string]bool{}
	}
	r.selPending[u] = pending
}

// forExporters calls f on every exporter at once, each retried on
// transient errors (network, 5xx, 429) for at most Options.PhaseRetry.
func (r *runner) forExporters(f func(context.Context, *phaseapi.Client) error, what string) {
	var wg sync.WaitGroup
	for _, c := range r.exporters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := retryExporter(r.opts.PhaseRetry, func(ctx context.Context) error { return f(ctx, c) },
				func(err error, d time.Duration) {
					r.log.Warn("exporter call failed; retrying", "what", what, "exporter", c.BaseURL(), "in", d, "err", err)
				}); err != nil {
				r.flag(contract.FlagExporterError)
				r.log.Error("exporter", "what", what, "exporter", c.BaseURL(), "err", err)
			}
		}()
	}
	wg.Wait()
}

// teardown stops the engine and closes the run on every exporter: after a
// normal formal phase through release (waiting for each exporter to report
// it closed or timed out); otherwise by ending the run at once.
func (r *runner) teardown(ctx context.Context, ok bool) {
	if !r.cfg.Engine.NoLifecycle {
		r.mu.Lock()
		r.stopping = true
		r.mu.Unlock()
		started := r.rec.phaseStart(contract.Startup) != 0
		if ok {
			r.postPhase(contract.Release)
		}
		if started && r.engine != nil {
			sctx, cancel := context.WithTimeout(r.stopBase(), r.cfg.Engine.StopGrace+2*time.Minute)
			if err := r.engine.Stop(sctx); err != nil {
				r.flag(contract.FlagEngineStop)
				r.log.Warn("stopping the engine", "err", err)
			} else if ok {
				// the release's process criterion: the engine is gone
				r.forExporters(func(ctx context.Context, c *phaseapi.Client) error {
					_, err := c.EngineExited(ctx, r.runID)
					if phaseapi.IsStatus(err, http.StatusNotFound) {
						// an exporter without the endpoint judges the
						// process criterion from NVML's process list
						r.log.Warn("exporter cannot take the engine's exit; its release relies on NVML's process list", "exporter", c.BaseURL(), "err", err)
						return nil
					}
					return err
				}, "reporting the engine's exit")
			}
			cancel()
		}
		if r.engLog != nil {
			r.engLog.Close()
		}
		if w, ok := r.engine.(Watcher); ok {
			if err := w.ExitErr(); err != nil {
				r.rec.man.Engine.ExitError = err.Error()
			}
		}
		if ok && ctx.Err() == nil {
			r.waitRelease(ctx)
			return
		}
	}
	r.forExporters(func(ctx context.Context, c *phaseapi.Client) error {
		_, err := c.EndRun(ctx, r.runID)
		return err
	}, "ending run")
}

func (r *runner) waitRelease(ctx context.Context) {
	r.log.Info("waiting for release on every exporter", "max", r.cfg.Engine.ReleaseWait)
	var wg sync.WaitGroup
	for _, c := range r.exporters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			wctx, cancel := context.WithTimeout(ctx, r.cfg.Engine.ReleaseWait)
			defer cancel()
			st, err := r.awaitRelease(wctx, c)
			if err != nil {
				if ctx.Err() != nil {
					r.flag(contract.FlagAborted)
				} else if wctx.Err() != nil {
					r.flag(contract.FlagReleaseWait)
				} else {
					r.flag(contract.FlagExporterError)
				}
				r.log.Error("release wait", "exporter", c.BaseURL(), "err", err)
			} else if st.Release.Closed == nil || !*st.Release.Closed {
				r.flag(contract.FlagReleaseNotClosed)
			}
			if err != nil || st.State != phaseapi.RunEnded {
				ectx, ecancel := context.WithTimeout(context.Background(), 15*time.Second)
				if _, err := c.EndRun(ectx, r.runID); err != nil {
					r.flag(contract.FlagExporterError)
					r.log.Error("ending run", "exporter", c.BaseURL(), "err", err)
				}
				ecancel()
			}
		}()
	}
	wg.Wait()
}

// progressEvery is how often a wait says what it waits for.
const progressEvery = 5 * time.Second

// awaitRelease polls c until the run's release closed or timed out, or ctx
// ends. Transient errors (an exporter restarting) are waited out; every
// progressEvery it logs what it waits for.
func (r *runner) awaitRelease(ctx context.Context, c *phaseapi.Client) (*phaseapi.RunStatus, error) {
	t0, said := time.Now(), time.Now()
	var last error
	for {
		cctx, cancel := context.WithTimeout(ctx, exporterCallTimeout)
		st, err := c.Run(cctx, r.runID)
		cancel()
		switch {
		case err == nil && (st.Release.State == phaseapi.ReleaseClosed || st.Release.State == phaseapi.ReleaseTimedOut || st.State == phaseapi.RunEnded):
			return st, nil
		case err != nil && !transient(err):
			return st, err
		}
		if err != nil {
			last = err
		}
		if time.Since(said) >= progressEvery {
			said = time.Now()
			why := ""
			if err == nil {
				why = releaseProgress(st.Release, time.Now())
			} else {
				why = err.Error()
			}
			r.log.Info("waiting for the release", "exporter", c.BaseURL(),
				"waited", time.Since(t0).Round(time.Second), "max", r.cfg.Engine.ReleaseWait, "now", why)
		}
		select {
		case <-ctx.Done():
			if last != nil {
				return st, fmt.Errorf("waiting for release of run %s on %s: %w (last error: %v)", r.runID, c.BaseURL(), ctx.Err(), last)
			}
			return st, fmt.Errorf("waiting for release of run %s on %s: %w", r.runID, c.BaseURL(), ctx.Err())
		case <-time.After(r.opts.PollInterval):
		}
	}
}

// finish closes the run's records: the summaries, the final remote-write
// samples, phases.json with each exporter's final status, and the final
// manifest.
func (r *runner) finish(start time.Time, status string, runErr error) (*Result, error) {
	res := &Result{RunID: r.runID, ArchiveDir: r.rec.arch.Dir, Status: status, Model: r.model,
		TargetRate: r.cfg.Rate, AchievedRate: r.rec.man.Load.AchievedRate,
		RemoteWriteURL: secretfile.RedactURL(r.cfg.RemoteWrite.URL), PrometheusURL: secretfile.RedactURL(r.cfg.Prometheus.URL), Release: map[string]*phaseapi.RunStatus{}, Start: start}
	var errs []error
	if runErr != nil {
		errs = append(errs, runErr)
	}
	if err := r.rec.reqs.Close(); err != nil {
		errs = append(errs, err)
	}
	res.Warmup, res.Summary = r.rec.summaries()
	info := r.runInfo(res.Summary)
	r.rec.man.RunInfo = &info
	if r.rec.rw != nil {
		res.RemoteWrite = r.closeRemoteWrite(info)
	}
	if err := r.rec.arch.WritePhases(r.finalStatuses(res)); err != nil {
		errs = append(errs, err)
	}
	return res, r.writeFinalManifest(res, status, errors.Join(errs...))
}

// closeRemoteWrite sends the final samples (recorder.closeRemoteWrite)
// within remote_write.flush_timeout and notes them in the manifest.
func (r *runner) closeRemoteWrite(info contract.RunIdentity) remotewrite.Stats {
	// The final samples' instant is archived: runs push re-sends them
	// with the very timestamps and values.
	at := unixSeconds(time.Now())
	r.rec.man.SamplesAt = at
	fs := r.rec.phaseStart(contract.Formal)
	fctx, cancel := context.WithTimeout(r.stopBase(), r.cfg.RemoteWrite.FlushTimeout)
	st, err := r.rec.closeRemoteWrite(fctx, at, r.rec.man.Load, info, fs)
	cancel()
	if err != nil {
		r.flag(contract.FlagRemoteWriteLost)
		r.log.Warn("remote write", "err", err)
	}
	r.rec.man.RemoteWrite = &st
	return st
}

// finalStatuses asks every exporter for its final status of the run
// (phases.json), flags what it says is wrong and puts it in res.Release.
func (r *runner) finalStatuses(res *Result) *runarchive.Phases {
	doc := &runarchive.Phases{RunID: r.runID}
	posted := r.rec.postedPhases()
	for _, c := range r.exporters {
		var st *phaseapi.RunStatus
		err := retryExporter(r.opts.PhaseRetry, func(ctx context.Context) error {
			var err error
			st, err = c.Run(ctx, r.runID)
			return err
		}, func(err error, d time.Duration) {
			r.log.Warn("reading the run's final status; retrying", "exporter", c.BaseURL(), "in", d, "err", err)
		})
		ep := runarchive.ExporterStatus{URL: c.BaseURL()}
		if err != nil {
			ep.Error = err.Error()
			r.flag(contract.FlagExporterError)
			if phaseapi.IsStatus(err, http.StatusNotFound) && len(posted) > 0 {
				r.flag(contract.FlagExporterLostPhases)
				r.log.Error("the exporter lost the run", "exporter", c.BaseURL(), "posted", strings.Join(posted, ","))
			}
		} else {
			ep.Status = st
			res.Release[c.BaseURL()] = st
			flags, why := checkExporterStatus(c.BaseURL(), st, posted)
			for _, f := range flags {
				r.flag(f)
			}
			for _, w := range why {
				r.log.Error("exporter's view of the run", "exporter", c.BaseURL(), "problem", w)
			}
		}
		doc.Exporters = append(doc.Exporters, ep)
	}
	return doc
}

// writeFinalManifest writes the manifest with the run's end: status,
// flags, summary and err (the run's error, nil when none); it returns err
// joined with the write's.
func (r *runner) writeFinalManifest(res *Result, status string, err error) error {
	res.End = time.Now()
	res.Flags = r.rec.flagList()
	r.rec.man.Status = status
	r.rec.man.Flags = res.Flags
	r.rec.man.Summary = &res.Summary
	r.rec.man.Ended = unixSeconds(res.End)
	r.rec.man.Engine.Model = r.model
	r.rec.man.PromptSetSHA256, r.rec.man.Prompts = r.src.digest()
	if err != nil {
		r.rec.man.Error = err.Error()
		res.Error = err.Error()
	}
	if werr := r.rec.writeManifest(); werr != nil {
		err = errors.Join(err, werr)
	}
	r.log.Info("bench run done", "run_id", r.runID, "status", status, "flags", strings.Join(res.Flags, ","),
		"formal_requests", res.Summary.Started, "failed", res.Summary.Failed)
	return err
}

// rateGauges sets the aggregates' rate gauges from the formal phase's
// start on (before it, none).
func (r *runner) rateGauges(now time.Time) {
	r.mu.Lock()
	fs := r.formalStart
	r.mu.Unlock()
	if fs.IsZero() {
		return
	}
	if d := now.Sub(fs).Seconds(); d > 0 {
		r.rec.agg.achieved.Set(float64(r.progress.started.Load()) / d)
	}
	r.rec.agg.target.Set(r.cfg.Rate)
}

// cpuTime is the process' user+system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
