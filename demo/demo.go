package demo

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/common/model"

	"github.com/joulemark/joulemark/analyze"
	"github.com/joulemark/joulemark/benchjob"
	"github.com/joulemark/joulemark/dashboards"
	"github.com/joulemark/joulemark/exporter"
	"github.com/joulemark/joulemark/internal/contract"
	"github.com/joulemark/joulemark/internal/ctxtime"
	"github.com/joulemark/joulemark/internal/gpu"
	"github.com/joulemark/joulemark/internal/promserver"
	"github.com/joulemark/joulemark/internal/remotewrite"
	"github.com/joulemark/joulemark/internal/runarchive"
	"github.com/joulemark/joulemark/internal/secretfile"
	"github.com/joulemark/joulemark/internal/simengine"
	"github.com/joulemark/joulemark/production"
	"github.com/joulemark/joulemark/report"
)

// Scrape jobs of the demo's targets: deploy/prometheus's names.
const (
	JobExporter = "joulemark-exporter"
	JobEngine   = "inference-engine"
)

// Result is what a demo run produced and where it is.
type Result struct {
	RunID string
	// Dir is the run's archive, Dir/<run_id>: an ordinary bench archive
	// (manifest.json, requests.jsonl, ...) with the demo's tsdb/, report/
	// and dashboards/ inside.
	Dir           string
	TSDBDir       string // "" with an external Prometheus
	BenchDir      string // the benchmark's run archive: Dir itself
	ReportDir     string
	DashboardsDir string
	PrometheusURL string

	Report *report.Report
	Bench  *benchjob.Result

	// Sim and Engine are the simulated GPUs and engine (ground truth for
	// tests: Sim.ExactEnergy, Engine.FaultLog).
	Sim    *gpu.Sim
	Engine *simengine.Engine
	// EngineGPUs are the simulated GPUs the benchmarked engine's pod holds:
	// what the run measures.
	EngineGPUs []int
	// Production is the production view of the run's span, written to
	// ProductionDir (joulemark analyze production).
	Production    *production.Report
	ProductionDir string
}

// Run runs the demo: it returns once the report is written (and, with
// KeepServing, once ctx ends). A Result comes back with an error whenever
// the run directory was created, so the caller can say where things are.
func Run(ctx context.Context, cfg Config) (res *Result, err error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("demo config: %w", err)
	}
	d, err := newDemo(cfg)
	if err != nil {
		return nil, err
	}
	// The exporter and Prometheus outlive an interrupted run: the benchmark
	// still ends its phases and flushes its samples into them, then the
	// closers stop everything in reverse order.
	defer func() {
		if cerr := d.close(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	if err := d.start(ctx); err != nil {
		return d.res, err
	}
	fmt.Fprintf(d.cfg.Out, "joulemark demo %s: a node of %d simulated GPUs; the benchmarked engine %s holds GPUs %s; Prometheus at %s\n",
		d.res.RunID, d.cfg.GPUs, d.cfg.Engine.Model, gpuList(d.layout.engine), secretfile.RedactURL(d.res.PrometheusURL))
	// Let Prometheus store a few samples of the idle GPUs before the run
	// starts: the idle phase's first boundary is interpolated between them.
	if err := ctxtime.Sleep(ctx, 3*d.cfg.ScrapeInterval); err != nil {
		return d.res, err
	}
	if err := d.bench(ctx); err != nil {
		return d.res, err
	}
	if err := d.report(ctx); err != nil {
		return d.res, err
	}
	if d.cfg.KeepServing {
		fmt.Fprintf(d.cfg.Out, "\nServing Prometheus at %s until interrupted (Ctrl-C).\n", secretfile.RedactURL(d.res.PrometheusURL))
		<-ctx.Done()
	}
	return d.res, nil
}

// demo is one demo run while it goes on: its archive, what it started and
// how to stop it.
type demo struct {
	cfg Config
	log *slog.Logger
	run *runarchive.Run
	res *Result

	// compCtx lives as long as the components (cancelled by the first
	// closer), not as long as the caller's context.
	compCtx context.Context
	closers []func() error

	sim            *gpu.Sim
	token          string
	tokenFile      string
	expSrv, engSrv *localServer
	// writeURL is Prometheus' remote-write endpoint; pushTargets, with an
	// external Prometheus, pushes the exporter's and engine's metrics there.
	writeURL    string
	pushTargets func(exp, eng prometheus.Gatherer)
	exp         *exporter.Exporter

	layout     layout
	idleSrv    *localServer      // the idle replica's /metrics, nil without one
	idleEng    *simengine.Engine // the idle replica
	servingSrv *localServer      // the second serving pod's API and /metrics, nil without one
	servingEng *simengine.Engine
}

// newDemo makes the run id (when none is given) and the run's archive,
// Dir/<run_id>, never over an earlier run.
func newDemo(cfg Config) (*demo, error) {
	if cfg.Out == nil {
		cfg.Out = io.Discard
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if cfg.RunID == "" {
		cfg.RunID = contract.NewRunID()
	}
	run, err := runarchive.Create(cfg.Dir, cfg.RunID)
	if err != nil {
		return nil, fmt.Errorf("demo: %w", err)
	}
	compCtx, compCancel := context.WithCancel(context.Background())
	return &demo{
		cfg: cfg, log: log, run: run, compCtx: compCtx,
		closers: []func() error{func() error { compCancel(); return nil }},
		res: &Result{
			RunID:         run.ID,
			Dir:           run.Dir,
			BenchDir:      run.Dir,
			ReportDir:     run.Path(runarchive.ReportDir),
			DashboardsDir: run.Path("dashboards"),
		},
	}, nil
}

// onClose registers f to run at the end, in reverse order of registration.
func (d *demo) onClose(f func() error) { d.closers = append(d.closers, f) }

// close stops everything started, last first; the first error is returned.
func (d *demo) close() error {
	var first error
	for i := len(d.closers) - 1; i >= 0; i-- {
		if err := d.closers[i](); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// start brings up the simulated GPUs, Prometheus, the exporter and the
// simulated engine.
func (d *demo) start(ctx context.Context) error {
	if err := d.startGPUs(); err != nil {
		return err
	}
	if err := d.writeSecret(); err != nil {
		return err
	}
	if err := d.listen(); err != nil {
		return err
	}
	if err := d.startPrometheus(ctx); err != nil {
		return err
	}
	if err := d.startExporter(); err != nil {
		return err
	}
	return d.startEngine()
}

// startGPUs makes the simulated GPUs, no engine on them yet.
func (d *demo) startGPUs() error {
	simCfg := d.cfg.Sim
	simCfg.GPUs = d.cfg.GPUs
	sim, err := gpu.NewSim(simCfg)
	if err != nil {
		return fmt.Errorf("simulated GPUs: %w", err)
	}
	sim.SetEngineState(gpu.EngineStopped)
	d.sim, d.res.Sim = sim, sim
	d.layout = newLayout(d.cfg.GPUs)
	d.res.EngineGPUs = d.layout.engine
	return d.detachOthers()
}

// writeSecret makes the exporter's phase API token. It lives outside the
// run directory and is removed at the end: secrets never reach the archive.
func (d *demo) writeSecret() error {
	secretDir, err := os.MkdirTemp("", "joulemark-demo-secret-")
	if err != nil {
		return fmt.Errorf("exporter token: %w", err)
	}
	d.onClose(func() error { return os.RemoveAll(secretDir) })
	d.token, d.tokenFile, err = writeToken(secretDir)
	return err
}

// listen takes the exporter's and engine's addresses first: Prometheus
// learns where to scrape, then the exporter where to push its raw samples.
func (d *demo) listen() error {
	var err error
	if d.expSrv, err = listenLocal("exporter"); err != nil {
		return err
	}
	d.onClose(d.expSrv.close)
	if d.engSrv, err = listenLocal("sim-engine"); err != nil {
		return err
	}
	d.onClose(d.engSrv.close)
	if len(d.layout.idle) > 0 {
		if d.idleSrv, err = listenLocal("sim-engine-idle"); err != nil {
			return err
		}
		d.onClose(d.idleSrv.close)
	}
	if len(d.layout.serving) > 0 {
		if d.servingSrv, err = listenLocal("sim-engine-serving"); err != nil {
			return err
		}
		d.onClose(d.servingSrv.close)
	}
	return nil
}

// startPrometheus starts the embedded Prometheus, scraping both targets;
// with an external one, the demo pushes their metrics by remote write.
func (d *demo) startPrometheus(ctx context.Context) error {
	if d.cfg.PrometheusURL != "" {
		return d.useExternalPrometheus(ctx)
	}
	d.res.TSDBDir = d.run.Path("tsdb")
	rs, err := ruleSources(d.cfg.Cost)
	if err != nil {
		return err
	}
	targets := []promserver.Target{
		{Job: JobExporter, URL: d.expSrv.url + "/metrics", Interval: d.cfg.ScrapeInterval},
		{Job: JobEngine, URL: d.engSrv.url + "/metrics", Interval: d.cfg.ScrapeInterval},
	}
	if d.idleSrv != nil {
		targets = append(targets, promserver.Target{Job: JobEngine + "-idle", URL: d.idleSrv.url + "/metrics", Interval: d.cfg.ScrapeInterval})
	}
	if d.servingSrv != nil {
		targets = append(targets, promserver.Target{Job: JobEngine + "-small", URL: d.servingSrv.url + "/metrics", Interval: d.cfg.ScrapeInterval})
	}
	prom, err := promserver.Start(d.compCtx, promserver.Options{
		Dir:           d.res.TSDBDir,
		ListenAddress: d.cfg.ListenAddress,
		ScrapeTargets: targets,
		RuleSources:   rs,
		Logger:        quiet(d.log).With("component", "prometheus"),
	})
	if err != nil {
		return fmt.Errorf("embedded Prometheus: %w", err)
	}
	d.onClose(prom.Close)
	d.res.PrometheusURL, d.writeURL = prom.URL(), prom.RemoteWriteURL()
	return nil
}

// useExternalPrometheus checks that the Prometheus at cfg.PrometheusURL
// takes remote write and prepares the push of the exporter's and engine's
// metrics (started once they exist).
func (d *demo) useExternalPrometheus(ctx context.Context) error {
	d.res.PrometheusURL = strings.TrimRight(d.cfg.PrometheusURL, "/")
	d.writeURL = d.res.PrometheusURL + "/api/v1/write"
	if err := probeRemoteWrite(ctx, d.writeURL, d.res.RunID); err != nil {
		return err
	}
	interval, log := d.cfg.ScrapeInterval, d.log
	w, err := remotewrite.New(remotewrite.Config{URL: d.writeURL, FlushInterval: interval}, log.With("component", "remote-write"))
	if err != nil {
		return err
	}
	node := map[string]string{"node": NodeLabel}
	d.pushTargets = func(exp, eng prometheus.Gatherer) {
		targets := []pushTarget{
			{job: JobExporter, instance: hostPort(d.expSrv.url), g: labelGatherer{exp, node}},
			{job: JobEngine, instance: hostPort(d.engSrv.url), g: labelGatherer{eng, engineLabels(EnginePod)}},
		}
		if d.idleEng != nil {
			targets = append(targets, pushTarget{job: JobEngine + "-idle", instance: hostPort(d.idleSrv.url), g: labelGatherer{d.idleEng.Registry(), engineLabels(IdlePod)}})
		}
		if d.servingEng != nil {
			targets = append(targets, pushTarget{job: JobEngine + "-small", instance: hostPort(d.servingSrv.url), g: labelGatherer{d.servingEng.Registry(), engineLabels(ServingPod)}})
		}
		p := startPusher(w, interval, log, targets...)
		d.onClose(func() error {
			cctx, c := context.WithTimeout(context.Background(), 30*time.Second)
			defer c()
			st, err := p.close(cctx)
			if err == nil && st.Lost() > 0 {
				err = fmt.Errorf("remote write to %s: %d exporter and engine samples lost", d.writeURL, st.Lost())
			}
			return err
		})
	}
	return nil
}

// startExporter starts the exporter on the simulated GPUs. It also pushes
// every raw sample (power and energy counter, with the sample's own
// timestamp), which the analysis prefers at stage boundaries over the
// scraped counter.
func (d *demo) startExporter() error {
	pods, err := d.startKubelet()
	if err != nil {
		return err
	}
	cfg := exporter.Defaults()
	cfg.Pods, cfg.Backend, cfg.Interval = pods, d.sim, d.cfg.SampleInterval
	cfg.ReleaseHold, cfg.ReleaseMaxWait, cfg.APIToken = d.cfg.ReleaseHold, d.cfg.ReleaseMaxWait, d.token
	cfg.RemoteWrite = &remotewrite.Config{URL: d.writeURL}
	cfg.RemoteWriteLabels = map[string]string{"job": JobExporter, "instance": hostPort(d.expSrv.url), "node": NodeLabel}
	cfg.Logger = quiet(d.log).With("component", "exporter")
	exp, err := exporter.New(cfg)
	if err != nil {
		return fmt.Errorf("exporter: %w", err)
	}
	exp.Start(d.compCtx)
	d.onClose(exp.Close)
	d.exp = exp
	// The exporter's API as it is, its /metrics with the node label a
	// scrape config would add.
	mux := http.NewServeMux()
	mux.Handle("/", exp.Handler())
	mux.Handle("GET /metrics", promhttp.HandlerFor(labelGatherer{exp.Gatherer(), map[string]string{"node": NodeLabel}}, promhttp.HandlerOpts{}))
	d.expSrv.serve(mux)
	return nil
}

// startEngine starts the simulated engine, coupled in-process to the GPUs.
func (d *demo) startEngine() error {
	var sink simengine.LoadSink = podSink{d.sim, d.layout.engine}
	if d.cfg.shapeLoad != nil {
		ss := newShapedSink(sink, d.cfg.shapeLoad)
		d.onClose(func() error { ss.close(); return nil })
		sink = ss
	}
	eng, err := simengine.New(d.cfg.Engine, sink)
	if err != nil {
		return err
	}
	d.res.Engine = eng
	d.onClose(func() error {
		sctx, c := context.WithTimeout(context.Background(), d.cfg.Engine.ShutdownDelay+10*time.Second)
		defer c()
		return eng.Stop(sctx)
	})
	mux := http.NewServeMux()
	mux.Handle("/", eng.Handler(nil))
	mux.Handle("GET /metrics", promhttp.HandlerFor(labelGatherer{eng.Registry(), engineLabels(EnginePod)}, promhttp.HandlerOpts{}))
	d.engSrv.serve(mux)
	if err := d.startIdleReplica(); err != nil {
		return err
	}
	if err := d.startServingPod(); err != nil {
		return err
	}
	if d.pushTargets != nil {
		d.pushTargets(d.exp.Gatherer(), eng.Registry())
	}
	return nil
}

// bench runs the benchmark into the run's archive: idle, startup, warm-up,
// formal, release.
func (d *demo) bench(ctx context.Context) error {
	bres, err := benchjob.Run(ctx, benchConfig(d.cfg, d.run, d.engSrv.url, d.expSrv.url, d.tokenFile, d.writeURL),
		benchjob.Options{
			Logger:       d.log.With("component", "bench"),
			Engine:       &engineController{e: d.res.Engine},
			Progress:     d.cfg.Progress,
			PollInterval: 250 * time.Millisecond,
			Archive:      d.run,
		})
	d.res.Bench = bres
	if err != nil {
		return fmt.Errorf("benchmark: %w", err)
	}
	return nil
}

// report waits until Prometheus holds the run's end (the exporter's
// release verdict), then analyzes the run into report/, writes the
// dashboards and prints the summary.
func (d *demo) report(ctx context.Context) error {
	res := d.res
	if err := waitForRelease(ctx, res.PrometheusURL, res.RunID, d.cfg.ScrapeInterval*10+30*time.Second); err != nil {
		return err
	}
	rep, err := analyze.Run(ctx, analyze.Config{
		PrometheusURL: res.PrometheusURL,
		RunID:         res.RunID,
		Params:        d.cfg.Params,
		OutDir:        res.ReportDir,
		QueryTimeout:  time.Minute,
		// The run's archive: the report counts empty, repeated and short
		// outputs beside throughput.
		Archive: res.Dir,
		Cost:    d.cfg.Cost,
		Logger:  d.log.With("component", "analyze"),
	})
	if err != nil {
		return fmt.Errorf("analysis: %w", err)
	}
	res.Report = rep
	if _, err := dashboards.Generate(res.DashboardsDir, ""); err != nil {
		return fmt.Errorf("dashboards: %w", err)
	}
	if err := writeSummary(d.cfg.Out, res); err != nil {
		return err
	}
	return d.production(ctx)
}

// benchConfig is the benchmark run the demo drives, into run's archive.
func benchConfig(cfg Config, run *runarchive.Run, engineURL, exporterURL, tokenFile, writeURL string) benchjob.Config {
	b := benchjob.Defaults()
	b.Target = engineURL + "/v1"
	b.Model = cfg.Engine.Model
	b.Endpoint = "completions"
	b.Concurrency = cfg.Concurrency
	b.Requests = cfg.FormalRequests
	b.Duration = cfg.Formal
	b.WarmupRequests = cfg.WarmupRequests
	b.IdleDuration = cfg.Idle
	b.Workload = benchjob.Workload{
		MeanInputTokens: cfg.InputTokens, StddevInputTokens: cfg.InputTokens / 10,
		MeanOutputTokens: cfg.OutputTokens, StddevOutputTokens: cfg.OutputStddev, Seed: int64(cfg.Engine.Seed),
	}
	if cfg.Workload != nil {
		b.Workload = *cfg.Workload
	}
	if cfg.Trace != "" {
		b.Workload.Trace, b.Concurrency = cfg.Trace, 0
	}
	if !cfg.NaturalStops {
		ignoreEOS := true
		b.Extras.IgnoreEOS = &ignoreEOS
	}
	b.Engine.ReadyTimeout = cfg.Engine.StartupDelay + time.Minute
	b.Engine.ReleaseWait = cfg.ReleaseMaxWait + time.Minute
	b.Engine.Version = "sim"
	b.Exporters = []string{exporterURL}
	// The run measures the engine pod's GPUs only (the exporter resolves
	// the pod through the fake kubelet).
	b.Engine.Pod = PodNamespace + "/" + EnginePod
	b.ExporterTokenFile = tokenFile
	b.RemoteWrite.URL = writeURL
	b.RemoteWrite.AggregateInterval = cfg.ScrapeInterval
	b.Engine.Metrics = true
	b.Engine.MetricsURL = engineURL + "/metrics"
	b.Engine.MetricsInterval = cfg.ScrapeInterval
	b.RunsDir = filepath.Dir(run.Dir)
	b.RunID = run.ID
	b.Scenario = runScenario(cfg.Scenario)
	return b
}

// runScenario is the run's scenario label (joulemark_run_info, the
// archive's config, the report's run.scenario): the demo and the scenario
// it simulates, so a later analyze of the run says the same.
func runScenario(scenario string) string {
	if scenario == "" || scenario == ScenarioHealthy {
		return "joulemark demo"
	}
	return "joulemark demo --scenario " + scenario
}

// writeToken writes a fresh phase API token to a 0600 file in dir.
func writeToken(dir string) (token, path string, err error) {
	var b [24]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", "", fmt.Errorf("exporter token: %w", err)
	}
	token = hex.EncodeToString(b[:])
	path = filepath.Join(dir, "exporter-token")
	if err := os.WriteFile(path, []byte(token+"\n"), 0o600); err != nil {
		return "", "", fmt.Errorf("exporter token: %w", err)
	}
	return token, path, nil
}

// waitForRelease polls Prometheus until joulemark_run_release_closed of the
// run is stored.
func waitForRelease(ctx context.Context, promURL, runID string, limit time.Duration) error {
	c, err := api.NewClient(api.Config{Address: promURL})
	if err != nil {
		return fmt.Errorf("prometheus client %s: %w", promURL, err)
	}
	pa := v1.NewAPI(c)
	q := fmt.Sprintf("last_over_time(joulemark_run_release_closed{run_id=%q}[1h])", runID)
	deadline := time.Now().Add(limit)
	for {
		v, _, _, err := pa.Query(ctx, q, time.Now())
		if err == nil {
			if vec, ok := v.(model.Vector); ok && len(vec) > 0 {
				return nil
			}
		}
		if time.Now().After(deadline) {
			if err == nil {
				err = errors.New("no sample yet")
			}
			return fmt.Errorf("waiting for Prometheus at %s to store the release of run %s: %w", promURL, runID, err)
		}
		if err := ctxtime.Sleep(ctx, 200*time.Millisecond); err != nil {
			return err
		}
	}
}

// hostPort is the host:port of an http URL (the instance label).
func hostPort(u string) string {
	if p, err := url.Parse(u); err == nil {
		return p.Host
	}
	return u
}

// gpuList writes GPU indexes as "0-4" for a run, "0,2" otherwise.
func gpuList(gpus []int) string {
	if len(gpus) > 2 && gpus[len(gpus)-1]-gpus[0] == len(gpus)-1 {
		return fmt.Sprintf("%d-%d", gpus[0], gpus[len(gpus)-1])
	}
	s := make([]string, len(gpus))
	for i, g := range gpus {
		s[i] = strconv.Itoa(g)
	}
	return strings.Join(s, ",")
}
