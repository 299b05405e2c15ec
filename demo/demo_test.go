package demo

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/joulemark/joulemark/internal/contract"
	"github.com/joulemark/joulemark/internal/testkit/testenv"
	"github.com/joulemark/joulemark/report"

	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"

	"github.com/joulemark/joulemark/analyze"
	"github.com/joulemark/joulemark/exporter"
	"github.com/joulemark/joulemark/internal/gpu"
	"github.com/joulemark/joulemark/internal/promserver"
	"github.com/joulemark/joulemark/internal/runarchive"
	"github.com/joulemark/joulemark/internal/stats"
	"github.com/joulemark/joulemark/internal/testkit/realprom"
	"github.com/joulemark/joulemark/production"
	"github.com/joulemark/joulemark/runset"
)

// smallConfig is the demo at test scale: phases of a few seconds, a fast
// engine (10 ms steps, 100-token completions, 32 at a time) so the formal
// phase holds a few hundred requests, steady-state windows of 40 requests.
func smallConfig(t *testing.T) Config {
	c := Defaults()
	c.Dir = t.TempDir()
	c.RunID = "e2e"
	// The deployment's 10 Hz sampling and 1 s scrape: the analysis
	// interpolates stage boundaries on the exporter's raw energy samples.
	c.SampleInterval = 100 * time.Millisecond
	c.ScrapeInterval = time.Second
	c.Idle = 5 * time.Second
	c.WarmupRequests = 32
	c.Formal = 12 * time.Second
	c.ReleaseHold = 2 * time.Second
	c.ReleaseMaxWait = 30 * time.Second
	c.Concurrency = 32
	c.InputTokens = 50
	c.OutputTokens = 100
	c.OutputStddev = 20
	c.Engine.MaxBatch = 32
	c.Engine.DecodeBase = 10 * time.Millisecond
	c.Engine.DecodePerSeq = 100 * time.Microsecond
	c.Engine.StartupDelay = 4 * time.Second
	c.Engine.ShutdownDelay = 500 * time.Millisecond
	c.Sim.RampSeconds = 1
	c.Sim.DecayTau = 1
	c.Params.SSWindow = 40
	c.Params.SSWindows = 3
	c.Params.SLOTPOT = 0
	c.Params.SLOTTFT = 150 * time.Millisecond
	if testing.Verbose() {
		c.Out = os.Stderr
	}
	return c
}

func runDemo(t *testing.T, cfg Config) *Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var out bytes.Buffer
	if cfg.Out == nil {
		cfg.Out = &out
	}
	res, err := Run(ctx, cfg)
	if err != nil {
		t.Fatalf("demo: %v\n%s", err, out.String())
	}
	return res
}

// exact is the simulator's exact energy over [from, to], summed over GPUs.
func exact(sim *gpu.Sim, gpus []int, from, to float64) float64 {
	var sum float64
	for _, i := range gpus {
		sum += sim.ExactEnergy(i, exporter.Time(from), exporter.Time(to))
	}
	return sum
}

func relErr(got, want float64) float64 { return math.Abs(got-want) / math.Abs(want) }

// TestDemoEndToEnd runs the whole pipeline once with steady work and slow
// first tokens injected into 20% of the requests, then checks the report
// against the simulator's ground truth.
func TestDemoEndToEnd(t *testing.T) {
	testenv.SkipIfShort(t, "end-to-end demo run (~30 s)")
	cfg := smallConfig(t)
	cfg.Engine.Faults.SlowFirstTokenRate = 0.2
	cfg.Engine.Faults.SlowFirstTokenDelay = 300 * time.Millisecond
	price, carbon, pue := 0.2, 400.0, 1.3
	cfg.Cost = report.CostInputs{PricePerKWh: &price, Currency: "EUR", CarbonIntensity: &carbon, PUE: &pue}
	res := runDemo(t, cfg)
	rep := res.Report

	// Everything the demo promises is on disk.
	for _, p := range []string{
		filepath.Join(res.ReportDir, report.FileJSON), filepath.Join(res.ReportDir, report.FileHTML),
		filepath.Join(res.BenchDir, "requests.jsonl"), filepath.Join(res.BenchDir, "manifest.json"),
		res.TSDBDir, res.DashboardsDir,
	} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("missing output: %v", err)
		}
	}
	if !rep.Release.Closed {
		t.Errorf("release not closed; flags %+v", rep.Flags)
	}

	// Stage energies against the exact integral of the simulated power,
	// within 0.5%: the exporter's phase energy and the report's counter
	// energy of every stage, and the report's totals.
	for _, name := range []string{"idle", "startup", "warmup", "formal", "release"} {
		st, ok := rep.Stages[name]
		if !ok {
			t.Errorf("stage %s missing", name)
			continue
		}
		want := exact(res.Sim, res.EngineGPUs, st.Start, st.End)
		if st.ExporterEnergyJoules == nil {
			t.Errorf("stage %s: no exporter energy", name)
		} else if e := relErr(*st.ExporterEnergyJoules, want); e > 0.005 {
			t.Errorf("stage %s: exporter energy %.1f J, exact %.1f J (%.2f%% off, want <= 0.5%%)", name, *st.ExporterEnergyJoules, want, 100*e)
		}
		if st.EnergyJoules == nil {
			t.Errorf("stage %s: no energy", name)
		} else if e := relErr(*st.EnergyJoules, want); e > 0.005 {
			t.Errorf("stage %s: report energy %.1f J, exact %.1f J (%.2f%% off, want <= 0.5%%)", name, *st.EnergyJoules, want, 100*e)
		}
		t.Logf("stage %-8s %6.2fs exact %9.1f J  report %9.1f J  exporter %9.1f J", name, st.DurationSeconds, want, deref(st.EnergyJoules), deref(st.ExporterEnergyJoules))
	}
	startup, formal := rep.Stages["startup"], rep.Stages["formal"]
	release := rep.Stages["release"]
	for _, c := range []struct {
		name     string
		got      *float64
		from, to float64
	}{
		{"startup+warmup", rep.Energy.StartupJoules, startup.Start, rep.Stages["warmup"].End},
		{"formal", rep.Energy.FormalJoules, formal.Start, formal.End},
		{"lifecycle", rep.Energy.LifecycleJoules, startup.Start, release.End},
	} {
		want := exact(res.Sim, res.EngineGPUs, c.from, c.to)
		if c.got == nil {
			t.Errorf("%s energy missing", c.name)
			continue
		}
		if e := relErr(*c.got, want); e > 0.005 {
			t.Errorf("%s energy %.1f J, exact %.1f J (%.2f%% off, want <= 0.5%%)", c.name, *c.got, want, 100*e)
		}
	}

	// Steady work: steady state is reached.
	if !rep.SteadyState.Reached {
		t.Errorf("steady state not reached on a steady simulation: %s", rep.SteadyState.Reason)
	}

	// Goodput: with no TPOT SLO and no errors, the good requests are the
	// formal ones whose first token was not delayed by the fault.
	slow := 0
	for _, f := range res.Engine.FaultLog() {
		at := float64(f.Arrival.UnixNano()) / 1e9
		if f.Kind == "slow_first_token" && at >= formal.Start && at <= formal.End {
			slow++
		}
	}
	started := rep.Requests.Started
	if slow == 0 || started < 100 {
		t.Fatalf("%d formal requests, %d slow first tokens: too few to check goodput", started, slow)
	}
	want := started - slow
	tol := max(2, started/50)
	if d := rep.Goodput.GoodRequests - want; d < -tol || d > tol {
		t.Errorf("good requests %d, want %d (%d started - %d slow first tokens) ± %d", rep.Goodput.GoodRequests, want, started, slow, tol)
	}
	if rep.Goodput.Ratio == nil || math.Abs(*rep.Goodput.Ratio-float64(rep.Goodput.GoodRequests)/float64(started)) > 1e-9 {
		t.Errorf("goodput ratio %v for %d good of %d", rep.Goodput.Ratio, rep.Goodput.GoodRequests, started)
	}
	if p99 := rep.Latency.TTFTSeconds.P99; p99 == nil || *p99 < 0.3 {
		t.Errorf("TTFT p99 %v s; 20%% of first tokens were delayed 300 ms", p99)
	}
	samePercentilesAsBench(t, res.BenchDir, rep)

	// The TSDB reopens, and the recording rules ran on the demo's series:
	// the per-run J/token from the benchmark aggregates, and the per-pod and
	// per-model ones that join the exporter's pod energy (fake kubelet) to
	// the engine's tokens on namespace and pod.
	prom, err := promserver.Start(t.Context(), promserver.Options{Dir: res.TSDBDir})
	if err != nil {
		t.Fatalf("reopening %s: %v", res.TSDBDir, err)
	}
	defer prom.Close()
	api := promAPI(t, prom.URL())
	for _, q := range []string{
		`run:joulemark_joules_per_token:ratio_rate1m{run_id="e2e"}`,
		fmt.Sprintf(`namespace_pod:joulemark_joules_per_generation_token:ratio_rate5m{namespace=%q, pod=%q}`, PodNamespace, EnginePod),
		fmt.Sprintf(`namespace_pod:joulemark_idle_allocated_energy_joules:rate5m{namespace=%q, pod=%q}`, PodNamespace, IdlePod),
		`model_name:joulemark_joules_per_generation_token:ratio_rate5m`,
		// The cost row of the fleet dashboard: the demo's --cost.* inputs as
		// constant recording rules, multiplied in by joulemark-cost.
		`model_name:joulemark_cost_per_hour:rate5m`,
		fmt.Sprintf(`namespace:joulemark_gco2e_per_hour:rate5m{namespace=%q}`, PodNamespace),
	} {
		v, _, _, err := api.Query(t.Context(), "max(max_over_time("+q+"[10m]))", time.Now())
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		if vec, ok := v.(model.Vector); !ok || len(vec) != 1 || !(vec[0].Value > 0) {
			t.Errorf("%s: %v, want a positive value recorded during the run", q, v)
		}
	}

	// The run is an ordinary archive: `joulemark runs list` sees it,
	// `analyze --runs-dir DIR --run-id ID` finds its requests, and
	// compare/pareto/plan read its report with the output sanity and the
	// configured load.
	checkOrdinaryArchive(t, cfg, res, prom.URL())

	// The production view of the same span: the engine pod's energy is the
	// exact energy of its GPUs, the idle replica's energy is all idle, the
	// last GPU is unallocated.
	checkProductionView(t, cfg, res)
	checkDemoCost(t, res)

	// Every query of the generated dashboards returns data for the run,
	// but for the host energy ones: the demo's exporter meters no host
	// (simulated GPUs; RAPL would meter the machine running everything),
	// which the report states (host_energy.reason not_exported); and the
	// cost ones, whose input gauges (PUE, price, carbon intensity) the
	// operator exposes and the demo has none of (dashboards/eval_test.go
	// checks their values on a fixture that has them).
	from, to := rep.Stages["idle"].Start, rep.Stages["release"].End+30
	if h := rep.HostEnergy; h == nil || h.Available || h.Reason != "not_exported" {
		t.Errorf("host energy %+v, want unavailable, not_exported", h)
	}
	n := 0
	for _, dq := range dashboardQueries(t, res.DashboardsDir, map[string]string{
		"$run_id": "e2e", "$node": ".*", "$gpu": ".*", "$namespace": ".*", "$pod": ".*", "$model": ".*",
		"$__rate_interval": "1m", "$__interval": "15s", "$__range": "1m",
	}) {
		if strings.Contains(dq.expr, "joulemark_host_energy") || strings.Contains(dq.expr, "joulemark_phase_host_energy") ||
			strings.Contains(dq.expr, ":joulemark_cost_") || strings.Contains(dq.expr, ":joulemark_gco2e_") {
			continue
		}
		n++
		v, _, _, err := api.QueryRange(t.Context(), dq.expr, v1.Range{Start: exporter.Time(from), End: exporter.Time(to), Step: 5 * time.Second})
		if err != nil {
			t.Errorf("dashboard %s, panel %q: %v\n%s", dq.file, dq.panel, err, dq.expr)
			continue
		}
		if m, ok := v.(model.Matrix); !ok || len(m) == 0 {
			t.Errorf("dashboard %s, panel %q: no data for the demo run\n%s", dq.file, dq.panel, dq.expr)
		}
	}
	if n < 20 {
		t.Errorf("%d dashboard queries found in %s", n, res.DashboardsDir)
	}
}

// checkOrdinaryArchive reads the demo's run through every reader of run
// archives: runarchive.List, analyze with RunsDir (against the reopened
// TSDB at promURL) and runset.LoadReports (compare, pareto, plan).
func checkOrdinaryArchive(t *testing.T, cfg Config, res *Result, promURL string) {
	t.Helper()
	if res.Dir != filepath.Join(cfg.Dir, res.RunID) || res.BenchDir != res.Dir || res.ReportDir != filepath.Join(res.Dir, "report") {
		t.Errorf("layout: dir %s, bench %s, report %s", res.Dir, res.BenchDir, res.ReportDir)
	}
	list, err := runarchive.List(cfg.Dir)
	if err != nil || len(list) != 1 || list[0].ID != res.RunID || list[0].Status() != runarchive.StatusCompleted {
		t.Fatalf("runs list of %s: %+v, %v", cfg.Dir, list, err)
	}
	again, err := analyze.Run(t.Context(), analyze.Config{
		PrometheusURL: promURL, RunID: res.RunID, Params: cfg.Params, RunsDir: cfg.Dir,
		OutDir: filepath.Join(t.TempDir(), "report-2"),
	})
	if err != nil {
		t.Fatalf("analyze --runs-dir %s --run-id %s: %v", cfg.Dir, res.RunID, err)
	}
	if again.OutputSanity == nil || res.Report.OutputSanity == nil || again.OutputSanity.Requests != res.Report.OutputSanity.Requests {
		t.Errorf("output sanity: re-analysis %+v, demo %+v", again.OutputSanity, res.Report.OutputSanity)
	}
	if a, b := again.Stages["formal"].EnergyJoules, res.Report.Stages["formal"].EnergyJoules; a == nil || b == nil || *a != *b {
		t.Errorf("formal energy: re-analysis %v, demo %v", a, b)
	}
	// The scenario is the run's (joulemark_run_info), not the demo's
	// report-time tag: a later analyze says the same.
	if again.Scenario != res.Report.Scenario || again.Scenario != runScenario(cfg.Scenario) {
		t.Errorf("scenario: re-analysis %q, demo %q, want %q", again.Scenario, res.Report.Scenario, runScenario(cfg.Scenario))
	}
	report := filepath.Join(res.ReportDir, report.FileJSON)
	for _, opts := range []runset.LoadOptions{{}, {RunsDir: cfg.Dir}} {
		set, err := runset.Load([]string{report}, opts)
		if err != nil {
			t.Fatal(err)
		}
		r := set.Runs[0]
		if r.Sanity == nil || r.Load == nil || r.Load.Concurrency != cfg.Concurrency {
			t.Errorf("runset.Load(%s, %+v): sanity %v, load %v", report, opts, r.Sanity, r.Load)
		}
	}
}

type dashboardQuery struct{ file, panel, expr string }

// dashboardQueries reads every panel query of the dashboards in dir with
// the variables replaced: vars first, then the dashboard's own defaults
// (textbox and custom variables).
func dashboardQueries(t *testing.T, dir string, vars map[string]string) []dashboardQuery {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("dashboards in %s: %v (%d files)", dir, err, len(files))
	}
	var out []dashboardQuery
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var d struct {
			Templating struct {
				List []struct {
					Name    string `json:"name"`
					Current struct {
						Value any `json:"value"`
					} `json:"current"`
				} `json:"list"`
			} `json:"templating"`
			Panels []json.RawMessage `json:"panels"`
		}
		if err := json.Unmarshal(b, &d); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		repl := map[string]string{}
		for _, v := range d.Templating.List {
			if s, ok := v.Current.Value.(string); ok {
				repl["$"+v.Name] = s
			}
		}
		for k, v := range vars {
			repl[k] = v
		}
		// Longest names first, so $__range is not taken for a prefix.
		keys := make([]string, 0, len(repl))
		for k := range repl {
			keys = append(keys, k)
		}
		sort.Slice(keys, func(i, j int) bool { return len(keys[i]) > len(keys[j]) })
		var walk func(v any, panel string)
		walk = func(v any, panel string) {
			switch x := v.(type) {
			case map[string]any:
				if title, ok := x["title"].(string); ok {
					panel = title
				}
				if e, ok := x["expr"].(string); ok {
					for _, k := range keys {
						e = strings.ReplaceAll(e, k, repl[k])
					}
					out = append(out, dashboardQuery{filepath.Base(f), panel, e})
				}
				for _, y := range x {
					walk(y, panel)
				}
			case []any:
				for _, y := range x {
					walk(y, panel)
				}
			}
		}
		for _, p := range d.Panels {
			var v any
			if err := json.Unmarshal(p, &v); err != nil {
				t.Fatal(err)
			}
			walk(v, "")
		}
	}
	return out
}

// TestDemoUnsteady makes power swing (a 6 s sawtooth from 20% to 100% of
// the load the GPUs see) while the work stays the same: J/token per request
// drifts within every window and steady state must not be reached.
func TestDemoUnsteady(t *testing.T) {
	testenv.SkipIfShort(t, "end-to-end demo run (~30 s)")
	cfg := smallConfig(t)
	cfg.shapeLoad = func(elapsed time.Duration, load float64) float64 {
		phase := math.Mod(elapsed.Seconds(), 6) / 6
		return load * (0.2 + 0.8*phase)
	}
	rep := runDemo(t, cfg).Report
	if rep.SteadyState.Reached {
		t.Errorf("steady state reached (requests %v..%v) although power swings every 6 s", rep.SteadyState.FirstRequest, rep.SteadyState.LastRequest)
	}
	if !strings.Contains(rep.SteadyState.Reason, "CV") {
		t.Errorf("reason %q does not name the CV test", rep.SteadyState.Reason)
	}
	found := false
	for _, f := range rep.Flags {
		found = found || f.Code == contract.FlagSteadyStateNotReach
	}
	if !found {
		t.Errorf("flags %+v lack %s", rep.Flags, contract.FlagSteadyStateNotReach)
	}
}

func deref(p *float64) float64 {
	if p == nil {
		return math.NaN()
	}
	return *p
}

// TestDemoExternalPrometheus runs the demo against a real Prometheus
// (--prometheus.url): the exporter's and engine's series and the
// per-request samples all arrive by remote write, and the analysis reads
// them back the same way.
func TestDemoExternalPrometheus(t *testing.T) {
	testenv.SkipIfShort(t, "end-to-end demo run (~30 s)")
	prom := realprom.Start(t, "")
	cfg := smallConfig(t)
	cfg.PrometheusURL = prom.URL
	res := runDemo(t, cfg)
	rep := res.Report
	if res.TSDBDir != "" {
		t.Errorf("TSDB dir %q with an external Prometheus", res.TSDBDir)
	}
	formal, ok := rep.Stages["formal"]
	if !ok || formal.EnergyJoules == nil {
		t.Fatalf("no formal stage energy: %+v", rep.Stages)
	}
	want := exact(res.Sim, res.EngineGPUs, formal.Start, formal.End)
	if e := relErr(*formal.EnergyJoules, want); e > 0.005 {
		t.Errorf("formal energy %.1f J, exact %.1f J (%.2f%% off)", *formal.EnergyJoules, want, 100*e)
	}
	if !rep.Release.Closed || rep.Requests.Started < 100 || rep.Requests.Failed != 0 {
		t.Errorf("release closed %v, %d started, %d failed", rep.Release.Closed, rep.Requests.Started, rep.Requests.Failed)
	}
	// The pushed series carry the labels a scrape would.
	api := promAPI(t, prom.URL)
	for _, q := range []string{
		fmt.Sprintf(`joulemark_gpu_energy_joules_total{job=%q,node=%q}`, JobExporter, NodeLabel),
		fmt.Sprintf(`vllm:generation_tokens_total{job=%q,node=%q}`, JobEngine, NodeLabel),
	} {
		v, _, _, err := api.Query(t.Context(), "count(last_over_time("+q+"[10m]))", time.Now())
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		if vec, ok := v.(model.Vector); !ok || len(vec) != 1 || vec[0].Value < 1 {
			t.Errorf("%s: %v", q, v)
		}
	}
}

func promAPI(t *testing.T, url string) v1.API {
	t.Helper()
	c, err := api.NewClient(api.Config{Address: url})
	if err != nil {
		t.Fatal(err)
	}
	return v1.NewAPI(c)
}

func checkProductionView(t *testing.T, cfg Config, res *Result) {
	t.Helper()
	pr := res.Production
	if pr == nil {
		t.Fatal("no production view")
	}
	if _, err := os.Stat(filepath.Join(res.ProductionDir, "report.html")); err != nil {
		t.Errorf("production report.html: %v", err)
	}
	pods := map[string]float64{}
	idle := map[string]float64{}
	for _, p := range pr.Pods {
		pods[p.Pod], idle[p.Pod] = p.EnergyJoules, p.IdleAllocatedJoules
	}
	want := exact(res.Sim, res.EngineGPUs, pr.From, pr.To)
	if e := pods[EnginePod]; relErr(e, want) > 0.02 {
		t.Errorf("production: engine pod %.0f J, its GPUs' exact energy %.0f J", e, want)
	}
	idleWant := exact(res.Sim, []int{cfg.GPUs - 2}, pr.From, pr.To)
	if e := pods[IdlePod]; relErr(e, idleWant) > 0.02 || relErr(idle[IdlePod], e) > 0.05 {
		t.Errorf("production: idle replica %.0f J (idle-allocated %.0f J), its GPU's exact energy %.0f J", e, idle[IdlePod], idleWant)
	}
	if u := exact(res.Sim, []int{cfg.GPUs - 1}, pr.From, pr.To); relErr(pr.UnallocatedJoules, u) > 0.02 {
		t.Errorf("production: unallocated %.0f J, the last GPU's exact energy %.0f J", pr.UnallocatedJoules, u)
	}
	models := map[string]production.ModelFigures{}
	for _, m := range pr.Models {
		models[m.Model] = m
	}
	if m := models[cfg.Engine.Model]; len(pr.Models) != 2 || m.Pods != 2 || m.JoulesPerToken == nil {
		t.Errorf("production models %+v, want the engine's model on 2 pods with a J/token, and the small one", pr.Models)
	}
	if m := models[ServingModel]; m.Pods != 1 || m.OutputTokens <= 0 || m.JoulesPerToken == nil {
		t.Errorf("production: the second serving pod's model %+v, want tokens and a J/token", m)
	}
	// The bench started the engine inside the span: one start, the bench's,
	// with the run report's startup energy (startup + warm-up).
	if len(pr.Starts) != 1 || pr.Starts[0].Source != production.StartBench || pr.Starts[0].RunID != res.Report.RunID ||
		pr.Starts[0].Pod != EnginePod || res.Report.Energy.StartupJoules == nil ||
		relErr(pr.Starts[0].EnergyJoules, *res.Report.Energy.StartupJoules) > 0.001 {
		want := math.NaN()
		if res.Report.Energy.StartupJoules != nil {
			want = *res.Report.Energy.StartupJoules
		}
		t.Errorf("production starts %+v, want the bench's start of %s with the report's startup energy %.1f J", pr.Starts, EnginePod, want)
	}
	servingWant := exact(res.Sim, []int{cfg.GPUs - 3}, pr.From, pr.To)
	if e := pods[ServingPod]; relErr(e, servingWant) > 0.02 {
		t.Errorf("production: serving pod %.0f J, its GPU's exact energy %.0f J", e, servingWant)
	}
}

// samePercentilesAsBench checks that the percentiles bench printed (its
// manifest's summary) are the report's for the same run: one statistics
// helper, one failure policy (internal/stats).
func samePercentilesAsBench(t *testing.T, benchDir string, rep *report.Report) {
	t.Helper()
	run, err := runarchive.OpenDir(benchDir)
	if err != nil {
		t.Fatal(err)
	}
	m, err := run.ReadManifest()
	if err != nil || m.Summary == nil {
		t.Fatalf("manifest summary: %v", err)
	}
	for _, c := range []struct {
		name        string
		bench, post stats.Percentiles
	}{
		{"ttft", m.Summary.TTFT.Percentiles, rep.Latency.TTFTSeconds},
		{"tpot", m.Summary.TPOT.Percentiles, rep.Latency.TPOTSeconds},
		{"latency", m.Summary.Latency.Percentiles, rep.Latency.LatencySeconds},
	} {
		b := []*float64{c.bench.P50, c.bench.P90, c.bench.P95, c.bench.P99}
		for i, a := range []*float64{c.post.P50, c.post.P90, c.post.P95, c.post.P99} {
			if (a == nil) != (b[i] == nil) || a != nil && math.Abs(*a-*b[i]) > 1e-6*math.Abs(*a) {
				t.Errorf("%s percentile %d: bench %v, report %v", c.name, i, deref(b[i]), deref(a))
			}
		}
	}
}

// checkDemoCost: the demo's cost inputs price the report (per run and per
// 1M output tokens, GPU energy × PUE) and the production view.
func checkDemoCost(t *testing.T, res *Result) {
	t.Helper()
	c := res.Report.Cost
	if c == nil || c.PerRun.Money == nil || c.PerRun.GramsCO2e == nil || c.Per1MOutputTokensSteady.Money == nil {
		t.Fatalf("report cost %+v, want money and emissions per run and per 1M tokens", c)
	}
	if !strings.Contains(c.Boundary, "PUE 1.3") || relErr(*c.PerRun.GramsCO2e / *c.PerRun.Money, 400/0.2) > 1e-9 {
		t.Errorf("report cost: boundary %q, %v gCO2e for %v EUR (want 2000 g per EUR at 400 g and 0.2 EUR per kWh)", c.Boundary, *c.PerRun.GramsCO2e, *c.PerRun.Money)
	}
	if pc := res.Production.Cost; pc == nil || len(pc.Models) == 0 || pc.Models[0].Money == nil {
		t.Errorf("production cost %+v, want each model priced", pc)
	}
}
