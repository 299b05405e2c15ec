package demo

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
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
	"github.com/joulemark/joulemark/gpu"
	"github.com/joulemark/joulemark/promserver"
	"github.com/joulemark/joulemark/remotewrite"
	"github.com/joulemark/joulemark/simengine"
)

// Scrape jobs of the demo's targets: deploy/prometheus's names.
const (
	JobExporter = "joulemark-exporter"
	JobEngine   = "inference-engine"
)

// Result is what a demo run produced and where it is.
type Result struct {
	RunID         string
	Dir           string // Dir/<run_id>
	TSDBDir       string // "" with an external Prometheus
	BenchDir      string // the benchmark's run archive
	ReportDir     string
	DashboardsDir string
	PrometheusURL string

	Report *analyze.Report
	Bench  *benchjob.Result

	// Sim and Engine are the simulated GPUs and engine (ground truth for
	// tests: Sim.ExactEnergy, Engine.FaultLog).
	Sim    *gpu.Sim
	Engine *simengine.Engine
}

// Run runs the demo: it returns once the report is written (and, with
// KeepServing, once ctx ends). A Result comes back with an error whenever
// the run directory was created, so the caller can say where things are.
func Run(ctx context.Context, cfg Config) (res *Result, err error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("demo config: %w", err)
	}
	if cfg.Out == nil {
		cfg.Out = io.Discard
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	runID := cfg.RunID
	if runID == "" {
		runID = benchjob.NewRunID()
	}

	// The run directory, never overwritten.
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("demo dir %s: %w", cfg.Dir, err)
	}
	dir := filepath.Join(cfg.Dir, runID)
	if err := os.Mkdir(dir, 0o755); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("demo run %s exists in %s; a run is never overwritten: give a new --run-id", runID, cfg.Dir)
		}
		return nil, fmt.Errorf("demo run dir: %w", err)
	}
	res = &Result{
		RunID:         runID,
		Dir:           dir,
		BenchDir:      filepath.Join(dir, "bench", runID),
		ReportDir:     filepath.Join(dir, "report"),
		DashboardsDir: filepath.Join(dir, "dashboards"),
	}
	// The exporter and Prometheus outlive an interrupted run: the benchmark
	// still ends its phases and flushes its samples into them, then the
	// closers stop everything in reverse order.
	compCtx, compCancel := context.WithCancel(context.Background())
	closers := []func() error{func() error { compCancel(); return nil }}
	defer func() {
		for i := len(closers) - 1; i >= 0; i-- {
			if cerr := closers[i](); cerr != nil && err == nil {
				err = cerr
			}
		}
	}()

	// Simulated GPUs, no engine on them yet.
	simCfg := cfg.Sim
	simCfg.GPUs = cfg.GPUs
	sim, err := gpu.NewSim(simCfg)
	if err != nil {
		return res, fmt.Errorf("simulated GPUs: %w", err)
	}
	sim.SetEngineState(gpu.EngineStopped)
	res.Sim = sim

	// The exporter's phase API token lives outside the run directory and is
	// removed at the end: secrets never reach the archive.
	secretDir, err := os.MkdirTemp("", "joulemark-demo-secret-")
	if err != nil {
		return res, fmt.Errorf("exporter token: %w", err)
	}
	closers = append(closers, func() error { return os.RemoveAll(secretDir) })
	token, tokenFile, err := writeToken(secretDir)
	if err != nil {
		return res, err
	}

	// Addresses first: Prometheus learns where to scrape, then the exporter
	// where to push its raw samples.
	expSrv, err := listenLocal("exporter")
	if err != nil {
		return res, err
	}
	closers = append(closers, expSrv.close)
	engSrv, err := listenLocal("sim-engine")
	if err != nil {
		return res, err
	}
	closers = append(closers, engSrv.close)
	node := map[string]string{"node": NodeLabel}

	// Prometheus: embedded, scraping both; or external, fed by remote write.
	var writeURL string
	var pushTargets func(exp, eng prometheus.Gatherer)
	if cfg.PrometheusURL == "" {
		res.TSDBDir = filepath.Join(dir, "tsdb")
		rs, err := ruleSources()
		if err != nil {
			return res, err
		}
		prom, err := promserver.Start(compCtx, promserver.Options{
			Dir:           res.TSDBDir,
			ListenAddress: cfg.ListenAddress,
			ScrapeTargets: []promserver.Target{
				{Job: JobExporter, URL: expSrv.url + "/metrics", Interval: cfg.ScrapeInterval},
				{Job: JobEngine, URL: engSrv.url + "/metrics", Interval: cfg.ScrapeInterval},
			},
			RuleSources: rs,
			Logger:      quiet(log).With("component", "prometheus"),
		})
		if err != nil {
			return res, fmt.Errorf("embedded Prometheus: %w", err)
		}
		closers = append(closers, prom.Close)
		res.PrometheusURL, writeURL = prom.URL(), prom.RemoteWriteURL()
	} else {
		res.PrometheusURL = strings.TrimRight(cfg.PrometheusURL, "/")
		writeURL = res.PrometheusURL + "/api/v1/write"
		if err := probeRemoteWrite(ctx, writeURL, runID); err != nil {
			return res, err
		}
		w, err := remotewrite.New(remotewrite.Config{URL: writeURL, FlushInterval: cfg.ScrapeInterval}, log.With("component", "remote-write"))
		if err != nil {
			return res, err
		}
		pushTargets = func(exp, eng prometheus.Gatherer) {
			p := startPusher(w, cfg.ScrapeInterval, log,
				pushTarget{job: JobExporter, instance: hostPort(expSrv.url), g: labelGatherer{exp, node}},
				pushTarget{job: JobEngine, instance: hostPort(engSrv.url), g: labelGatherer{eng, node}})
			closers = append(closers, func() error {
				cctx, c := context.WithTimeout(context.Background(), 30*time.Second)
				defer c()
				st, err := p.close(cctx)
				if err == nil && st.Lost() > 0 {
					err = fmt.Errorf("remote write to %s: %d exporter and engine samples lost", writeURL, st.Lost())
				}
				return err
			})
		}
	}

	// The exporter: it also pushes every raw sample (power and energy
	// counter, with the sample's own timestamp), which the analysis prefers
	// at stage boundaries over the scraped counter.
	exp, err := exporter.New(exporter.Config{
		Backend:           sim,
		Interval:          cfg.SampleInterval,
		ReleaseHold:       cfg.ReleaseHold,
		ReleaseMaxWait:    cfg.ReleaseMaxWait,
		APIToken:          token,
		RemoteWrite:       &remotewrite.Config{URL: writeURL},
		RemoteWriteLabels: map[string]string{"job": JobExporter, "instance": hostPort(expSrv.url), "node": NodeLabel},
		Logger:            quiet(log).With("component", "exporter"),
	})
	if err != nil {
		return res, fmt.Errorf("exporter: %w", err)
	}
	exp.Start(compCtx)
	closers = append(closers, exp.Close)
	// The exporter's API as it is, its /metrics with the node label a
	// scrape config would add.
	expMux := http.NewServeMux()
	expMux.Handle("/", exp.Handler())
	expMux.Handle("GET /metrics", promhttp.HandlerFor(labelGatherer{exp.Gatherer(), node}, promhttp.HandlerOpts{}))
	expSrv.serve(expMux)

	// The simulated engine, coupled in-process to the GPUs.
	var sink simengine.LoadSink = sim
	if cfg.shapeLoad != nil {
		ss := newShapedSink(sim, cfg.shapeLoad)
		closers = append(closers, func() error { ss.close(); return nil })
		sink = ss
	}
	eng, err := simengine.New(cfg.Engine, sink)
	if err != nil {
		return res, err
	}
	res.Engine = eng
	closers = append(closers, func() error {
		sctx, c := context.WithTimeout(context.Background(), cfg.Engine.ShutdownDelay+10*time.Second)
		defer c()
		return eng.Stop(sctx)
	})
	engMux := http.NewServeMux()
	engMux.Handle("/", eng.Handler(nil))
	engMux.Handle("GET /metrics", promhttp.HandlerFor(labelGatherer{eng.Registry(), node}, promhttp.HandlerOpts{}))
	engSrv.serve(engMux)
	if pushTargets != nil {
		pushTargets(exp.Gatherer(), eng.Registry())
	}
	fmt.Fprintf(cfg.Out, "joulemark demo %s: %d simulated GPUs, simulated engine %s, Prometheus at %s\n",
		runID, cfg.GPUs, cfg.Engine.Model, res.PrometheusURL)
	// Let Prometheus store a few samples of the idle GPUs before the run
	// starts: the idle phase's first boundary is interpolated between them.
	if err := sleepCtx(ctx, 3*cfg.ScrapeInterval); err != nil {
		return res, err
	}

	// The benchmark: idle, startup, warm-up, formal, release.
	bres, err := benchjob.Run(ctx, benchConfig(cfg, runID, dir, engSrv.url, expSrv.url, tokenFile, writeURL),
		benchjob.Options{
			Logger:       log.With("component", "bench"),
			Engine:       &engineController{e: eng},
			Progress:     cfg.Progress,
			PollInterval: 250 * time.Millisecond,
		})
	res.Bench = bres
	if err != nil {
		return res, fmt.Errorf("benchmark: %w", err)
	}

	// Wait until Prometheus holds the run's end (the exporter's release
	// verdict), then analyze.
	if err := waitForRelease(ctx, res.PrometheusURL, runID, cfg.ScrapeInterval*10+30*time.Second); err != nil {
		return res, err
	}
	rep, err := analyze.Run(ctx, analyze.Config{
		PrometheusURL: res.PrometheusURL,
		RunID:         runID,
		Params:        cfg.Params,
		OutDir:        res.ReportDir,
		Scenario:      "joulemark demo",
		QueryTimeout:  time.Minute,
		// The bench archive: the report counts empty, repeated and short
		// outputs beside throughput.
		Archive: res.BenchDir,
	})
	if err != nil {
		return res, fmt.Errorf("analysis: %w", err)
	}
	res.Report = rep
	if _, err := dashboards.Generate(res.DashboardsDir, ""); err != nil {
		return res, fmt.Errorf("dashboards: %w", err)
	}
	if err := writeSummary(cfg.Out, res); err != nil {
		return res, err
	}
	if cfg.KeepServing {
		fmt.Fprintf(cfg.Out, "\nServing Prometheus at %s until interrupted (Ctrl-C).\n", res.PrometheusURL)
		<-ctx.Done()
	}
	return res, nil
}

// benchConfig is the benchmark run the demo drives.
func benchConfig(cfg Config, runID, dir, engineURL, exporterURL, tokenFile, writeURL string) benchjob.Config {
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
	ignoreEOS := true
	b.Extras.IgnoreEOS = &ignoreEOS
	b.Engine.ReadyTimeout = cfg.Engine.StartupDelay + time.Minute
	b.Engine.ReleaseWait = cfg.ReleaseMaxWait + time.Minute
	b.Engine.Version = "sim"
	b.Exporters = []string{exporterURL}
	b.ExporterTokenFile = tokenFile
	b.RemoteWrite.URL = writeURL
	b.RemoteWrite.AggregateInterval = cfg.ScrapeInterval
	b.EngineMetrics = true
	b.EngineMetricsURL = engineURL + "/metrics"
	b.EngineMetricsInterval = cfg.ScrapeInterval
	b.RunsDir = filepath.Join(dir, "bench")
	b.RunID = runID
	return b
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
		if err := sleepCtx(ctx, 200*time.Millisecond); err != nil {
			return err
		}
	}
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// hostPort is the host:port of an http URL (the instance label).
func hostPort(u string) string {
	if p, err := url.Parse(u); err == nil {
		return p.Host
	}
	return u
}
