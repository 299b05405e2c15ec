package dashboards

//lint:file-ignore SA1019 dashboard.Dashboard (schema v1) is what Grafana's file provisioning loads in every supported release.

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/prometheus"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/promql/promqltest"
	"github.com/prometheus/prometheus/rules"
	"github.com/prometheus/prometheus/util/teststorage"
)

// Synthetic fleet and run: one node (n1) with two GPUs, one vLLM engine,
// run r1 going idle (0-60 s), startup, warm-up, formal (180-1100 s) and
// release (1100 s on), 5 s samples for 20 minutes.
const (
	evalStep = 5 * time.Second
	evalEnd  = 20 * time.Minute
)

func fixture() string {
	n := int(evalEnd / evalStep)
	var b strings.Builder
	fmt.Fprintf(&b, "load %s\n", model.Duration(evalStep))
	exp := `node="n1", instance="n1:9402", job="joulemark-exporter"`
	series := func(name, lbls, values string) {
		fmt.Fprintf(&b, "  %s{%s} %s\n", name, lbls, values)
	}
	constant := func(v float64) string { return fmt.Sprintf("%gx%d", v, n) }
	counter := func(inc float64) string { return fmt.Sprintf("0+%gx%d", inc, n) }
	for _, g := range []string{"0", "1"} {
		gl := exp + `, gpu="` + g + `", uuid="GPU-` + g + `"`
		series("joulemark_gpu_info", gl+`, name="H100", driver_version="570", power_source="instant", energy_source="counter"`, constant(1))
		series("joulemark_gpu_power_watts", gl, constant(300))
		series("joulemark_gpu_energy_joules_total", gl, counter(1500))
		series("joulemark_gpu_memory_used_bytes", gl, constant(4e10))
		series("joulemark_gpu_utilization_ratio", gl, constant(0.8))
		series("joulemark_gpu_temperature_celsius", gl, constant(60))
		series("joulemark_gpu_power_limit_watts", gl, constant(700))
		series("joulemark_gpu_sm_clock_hertz", gl, constant(1.98e9))
		series("joulemark_sampler_samples_total", gl, counter(50))
		series("joulemark_sampler_errors_total", gl, constant(0))
		series("joulemark_run_baseline_power_watts", gl+`, run_id="r1"`, constant(70))
		for _, p := range []string{"idle", "startup", "warmup", "formal", "release"} {
			series("joulemark_phase_energy_joules", gl+`, run_id="r1", phase="`+p+`"`, constant(5000))
		}
	}
	series("joulemark_sampler_overruns_total", exp, constant(0))
	// Host energy: n1's package at 120 W and DRAM at 15 W (core inside the
	// package, never summed); n2 cannot read RAPL.
	series("joulemark_host_energy_joules_total", exp+`, zone="intel-rapl:0", domain="package-0"`, counter(600))
	series("joulemark_host_energy_joules_total", exp+`, zone="intel-rapl:0:1", domain="dram"`, counter(75))
	series("joulemark_host_energy_joules_total", exp+`, zone="intel-rapl:0:0", domain="core"`, counter(50))
	series("joulemark_phase_host_energy_joules", exp+`, run_id="r1", phase="formal", zone="intel-rapl:0", domain="package-0"`, constant(110400))
	series("joulemark_phase_host_energy_joules", exp+`, run_id="r1", phase="formal", zone="intel-rapl:0:1", domain="dram"`, constant(13800))
	series("joulemark_host_energy_unavailable", `node="n2", instance="n2:9402", job="joulemark-exporter", reason="permission_denied"`, constant(1))
	series("joulemark_run_release_closed", exp+`, run_id="r1"`, constant(1))
	phases := []struct {
		name       string
		start, end float64 // seconds; end 0: still active
	}{{"idle", 0, 60}, {"startup", 60, 120}, {"warmup", 120, 180}, {"formal", 180, 1100}, {"release", 1100, 0}}
	for _, p := range phases {
		pl := exp + `, run_id="r1", phase="` + p.name + `"`
		var active []string
		for i := 0; i <= n; i++ {
			t := float64(i) * evalStep.Seconds()
			v := "0"
			if t >= p.start && (p.end == 0 || t < p.end) {
				v = "1"
			}
			active = append(active, v)
		}
		series("joulemark_phase_active", pl, strings.Join(active, " "))
		series("joulemark_phase_start_timestamp_seconds", pl, constant(p.start))
		if p.end > 0 {
			series("joulemark_phase_end_timestamp_seconds", pl, constant(p.end))
		}
	}
	// Per-request samples, two slots, one request per slot every 5 s.
	for _, slot := range []string{"0", "1"} {
		rl := `run_id="r1", phase="formal", slot="` + slot + `", job="joulemark-bench"`
		series("joulemark_request_output_tokens", rl, constant(100))
		series("joulemark_request_input_tokens", rl, constant(500))
		series("joulemark_request_ttft_seconds", rl, constant(0.2))
		series("joulemark_request_latency_seconds", rl, constant(2))
		series("joulemark_request_success", rl, constant(1))
	}
	bl := `run_id="r1", job="joulemark-bench"`
	series("joulemark_bench_requests_total", bl+`, outcome="success"`, counter(2))
	series("joulemark_bench_output_tokens_total", bl+`, phase="formal"`, counter(200))
	for _, h := range []struct{ name, le string }{
		{"joulemark_bench_ttft_seconds", "0.5"}, {"joulemark_bench_tpot_seconds", "0.05"}, {"joulemark_bench_latency_seconds", "5"},
	} {
		hl := bl + `, phase="formal"`
		series(h.name+"_bucket", hl+`, le="0.001"`, constant(0))
		series(h.name+"_bucket", hl+`, le="`+h.le+`"`, counter(2))
		series(h.name+"_bucket", hl+`, le="+Inf"`, counter(2))
		series(h.name+"_count", hl, counter(2))
		series(h.name+"_sum", hl, counter(0.4))
	}
	series("joulemark_bench_requests_in_flight", bl, constant(2))
	series("joulemark_bench_target_rate_requests_per_second", bl, constant(0.4))
	series("joulemark_bench_achieved_rate_requests_per_second", bl, constant(0.4))
	el := `node="n1", instance="n1:8000", job="inference-engine", model_name="m", namespace="serve", pod="engine-0"`
	series("vllm:num_requests_running", el, constant(2))
	series("vllm:num_requests_waiting", el, constant(0))
	series("vllm:kv_cache_usage_perc", el, constant(0.3))
	series("vllm:gpu_cache_usage_perc", el, constant(0.3))
	series("vllm:generation_tokens_total", el, counter(200))
	series("vllm:prompt_tokens_total", el, counter(1000))
	series("vllm:num_preemptions_total", el, constant(0))
	// Energy per pod: serve/engine-0 holds GPU 0 (300 W) and serves model m
	// at 40 tokens/s; serve/engine-idle (70 W, its allocation since 15 min)
	// serves m but generates nothing; GPU 1 is unallocated.
	series("joulemark_gpu_allocation_info", exp+`, gpu="0", uuid="GPU-0", namespace="serve", pod="engine-0", container="engine", resource="nvidia.com/gpu", shared="false"`, constant(1))
	series("joulemark_pod_energy_joules_total", exp+`, namespace="serve", pod="engine-0", container="engine"`, counter(1500))
	series("joulemark_gpu_allocation_info", exp+`, gpu="2", uuid="GPU-2", namespace="serve", pod="engine-idle", container="engine", resource="nvidia.com/gpu", shared="false"`, fmt.Sprintf("_x%d 1x%d", n*3/4, n/4))
	series("joulemark_pod_energy_joules_total", exp+`, namespace="serve", pod="engine-idle", container="engine"`, counter(350))
	series("joulemark_unallocated_energy_joules_total", exp+`, gpu="1", uuid="GPU-1"`, counter(1500))
	series("vllm:generation_tokens_total", `node="n1", instance="n1:8001", job="inference-engine", model_name="m", namespace="serve", pod="engine-idle"`, constant(0))
	// Cost inputs, as the operator exposes them (constant recording rules).
	series("joulemark_pue", "", constant(1.3))
	series("joulemark_energy_price_per_kwh", "", constant(0.2))
	series("joulemark_carbon_intensity_gco2e_per_kwh", "", constant(400))
	return b.String()
}

// evalRules evaluates the recording rules of rules/*.yml every 15 s over
// the fixture, as Prometheus would, and stores their results.
func evalRules(t *testing.T, st *teststorage.TestStorage, engine *promql.Engine) int {
	t.Helper()
	paths, _ := filepath.Glob(filepath.Join(rulesDir, "*.yml"))
	p := parser.NewParser(parser.Options{})
	type group []*rules.RecordingRule
	var groups []group
	for _, path := range paths {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), "groups:") {
			continue
		}
		rgs, errs := rulefmt.Parse(b, false, model.UTF8Validation, p, slog.New(slog.DiscardHandler))
		if len(errs) > 0 {
			t.Fatalf("%s: %v", path, errs)
		}
		for _, g := range rgs.Groups {
			var rs group
			for _, r := range g.Rules {
				if r.Record == "" {
					continue
				}
				e, err := p.ParseExpr(r.Expr)
				if err != nil {
					t.Fatal(err)
				}
				rs = append(rs, rules.NewRecordingRule(r.Record, e, labels.FromMap(r.Labels)))
			}
			groups = append(groups, rs)
		}
	}
	ctx := context.Background()
	q := rules.EngineQueryFunc(engine, st)
	var n int
	for ts := time.Duration(0); ts <= evalEnd; ts += 15 * time.Second {
		at := time.Unix(0, 0).Add(ts)
		for _, g := range groups {
			for _, r := range g {
				vec, err := r.Eval(ctx, 0, at, q, nil, 0)
				if err != nil {
					t.Fatalf("rule %s at %v: %v", r.Name(), ts, err)
				}
				app := st.Appender(ctx)
				for _, s := range vec {
					if _, err := app.Append(0, s.Metric, s.T, s.F); err != nil {
						t.Fatalf("rule %s: %v", r.Name(), err)
					}
					n++
				}
				if err := app.Commit(); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	return n
}

// TestQueriesEvaluate runs every dashboard query, annotation and variable
// selector on the fixture (with the recording rules evaluated over it) and
// requires each to return data: a query that parses but never matches
// (a wrong label join, a wrong rule name) fails here.
func TestQueriesEvaluate(t *testing.T) {
	st := promqltest.LoadedStorage(t, fixture())
	engine := promqltest.NewTestEngine(t, false, 5*time.Minute, promqltest.DefaultMaxSamplesPerQuery)
	if n := evalRules(t, st, engine); n == 0 {
		t.Fatal("the recording rules produced no sample on the fixture")
	}
	values := map[string]string{
		"__rate_interval": "1m", "__interval": "15s", "__range": "20m",
		"node": ".*", "gpu": ".*", "run_id": "r1", "namespace": ".*", "pod": ".*", "model": ".*",
	}
	ctx := context.Background()
	for _, f := range render(t) {
		d := load(t, f)
		exprs, err := expressions(d)
		if err != nil {
			t.Fatal(err)
		}
		instant := instantQueries(d)
		vars := variables(d)
		for k, v := range values {
			if _, defined := vars[k]; defined || strings.HasPrefix(k, "__") {
				vars[k] = v
			}
		}
		for _, where := range slices.Sorted(maps.Keys(exprs)) {
			s, err := substitute(exprs[where], vars)
			if err != nil {
				t.Errorf("%s: %s: %v", f.Name, where, err)
				continue
			}
			var q promql.Query
			if instant[where] || strings.HasPrefix(where, "variable ") {
				q, err = engine.NewInstantQuery(ctx, st, nil, s, time.Unix(0, 0).Add(evalEnd))
			} else {
				q, err = engine.NewRangeQuery(ctx, st, nil, s, time.Unix(0, 0).Add(evalEnd/2), time.Unix(0, 0).Add(evalEnd), 15*time.Second)
			}
			if err != nil {
				t.Errorf("%s: %s: %v", f.Name, where, err)
				continue
			}
			res := q.Exec(ctx)
			if res.Err != nil {
				t.Errorf("%s: %s: evaluation failed: %v\n  %s", f.Name, where, res.Err, s)
			} else if empty(res.Value) {
				t.Errorf("%s: %s: no data on the fixture\n  %s", f.Name, where, s)
			}
			q.Close()
		}
	}
}

func empty(v parser.Value) bool {
	switch r := v.(type) {
	case promql.Vector:
		return len(r) == 0
	case promql.Matrix:
		return len(r) == 0
	case promql.Scalar:
		return false
	}
	return true
}

// instantQueries marks the panel queries that Grafana runs as instant.
func instantQueries(d dashboard.Dashboard) map[string]bool {
	out := map[string]bool{}
	for _, p := range panels(d) {
		for _, q := range p.Targets {
			if pq, ok := q.(*prometheus.Dataquery); ok && pq.Instant != nil && *pq.Instant {
				out[fmt.Sprintf("panel %q query %s", deref(p.Title), deref(pq.RefId))] = true
			}
		}
	}
	return out
}

// TestQueryValues checks the figures of a few panels against the
// definitions, computed by hand on the fixture.
func TestQueryValues(t *testing.T) {
	st := promqltest.LoadedStorage(t, fixture())
	engine := promqltest.NewTestEngine(t, false, 5*time.Minute, promqltest.DefaultMaxSamplesPerQuery)
	evalRules(t, st, engine)
	// 240 samples per per-request series in the left-open range (0, 20m];
	// 2 slots of 100 tokens.
	const formalTokens = 2 * 100 * 240.0
	for _, tc := range []struct {
		file, where string
		labels      string // the series to read, by its label string; "" when one
		want        float64
	}{
		{"benchmark-run.json", `panel "Formal-stage J/token" query A`, "", 2 * 5000 / formalTokens},
		{"benchmark-run.json", `panel "Full-lifecycle J/token" query A`, "", 4 * 2 * 5000 / formalTokens},
		{"benchmark-run.json", `panel "Stage energy" query A`, `{phase="formal"}`, 2 * 5000},
		{"benchmark-run.json", `panel "Stage energy" query B`, `{phase="formal"}`, 920},
		{"benchmark-run.json", `panel "Stage energy" query C`, `{phase="warmup"}`, 2 * 5000 / 60.0},
		{"benchmark-run.json", `panel "Time per output token" query D`, `{phase="formal", slot="0"}`, (2 - 0.2) / 99},
		{"benchmark-run.json", `panel "Goodput" query D`, "", 1},
		{"benchmark-run.json", `panel "Idle baseline power" query A`, "", 140},
		// package 120 W + DRAM 15 W; core (inside the package) left out
		{"benchmark-run.json", `panel "Host power (RAPL)" query A`, `{node="n1"}`, 135},
		{"benchmark-run.json", `panel "Formal-stage host energy" query A`, "", 920 * 135},
		{"sweep-comparison.json", `panel "Runs" query E`, `{run_id="r1"}`, formalTokens / 920},
		// Model m's pods, 300 W + 70 W (the idle one counts), over their 200
		// tokens per 5 s = 40 tokens/s.
		{"fleet-energy.json", `panel "Live J/token (engines)" query A`, "", 370.0 / 40},
		{"fleet-energy.json", `panel "Live J/token per pod (engines)" query A`, `{__name__="namespace_pod:joulemark_joules_per_generation_token:ratio_rate5m", namespace="serve", pod="engine-0"}`, 300.0 / 40},
		{"fleet-energy.json", `panel "Unallocated and idle-allocated energy rate" query A`, `{__name__="node:joulemark_unallocated_energy_joules:rate5m", node="n1"}`, 300},
		{"fleet-energy.json", `panel "Unallocated and idle-allocated energy rate" query B`, `{__name__="namespace_pod:joulemark_idle_allocated_energy_joules:rate5m", namespace="serve", pod="engine-idle"}`, 70},
		{"fleet-energy.json", `panel "Energy rate per namespace" query A`, `{__name__="namespace:joulemark_energy_joules:rate5m", namespace="serve"}`, 370},
		{"fleet-energy.json", `panel "Energy rate per node" query A`, `{node="n1"}`, 600},
		// Model m's and namespace serve's 370 W: 0.37 kWh per hour × PUE 1.3,
		// at 0.2 per kWh and 400 gCO2e/kWh.
		{"fleet-energy.json", `panel "Energy cost per hour by model and namespace (GPU energy × PUE)" query A`, `{__name__="model_name:joulemark_cost_per_hour:rate5m", model_name="m"}`, 0.37 * 1.3 * 0.2},
		{"fleet-energy.json", `panel "Energy cost per hour by model and namespace (GPU energy × PUE)" query B`, `{__name__="namespace:joulemark_cost_per_hour:rate5m", namespace="serve"}`, 0.37 * 1.3 * 0.2},
		{"fleet-energy.json", `panel "Emissions per hour by model and namespace (GPU energy × PUE)" query A`, `{__name__="model_name:joulemark_gco2e_per_hour:rate5m", model_name="m"}`, 0.37 * 1.3 * 400},
		{"fleet-energy.json", `panel "Emissions per hour by model and namespace (GPU energy × PUE)" query B`, `{__name__="namespace:joulemark_gco2e_per_hour:rate5m", namespace="serve"}`, 0.37 * 1.3 * 400},
	} {
		var d dashboard.Dashboard
		for _, f := range render(t) {
			if f.Name == tc.file {
				d = load(t, f)
			}
		}
		exprs, err := expressions(d)
		if err != nil {
			t.Fatal(err)
		}
		expr, ok := exprs[tc.where]
		if !ok {
			t.Errorf("%s: no %s", tc.file, tc.where)
			continue
		}
		vars := variables(d)
		for k, v := range map[string]string{"__rate_interval": "1m", "__interval": "15s", "__range": "20m", "node": ".*", "gpu": ".*", "run_id": "r1", "namespace": ".*", "pod": ".*", "model": ".*"} {
			vars[k] = v
		}
		s, err := substitute(expr, vars)
		if err != nil {
			t.Fatal(err)
		}
		// The live J/token rules are 1m/5m rates: read them inside the formal phase.
		at := time.Unix(0, 0).Add(evalEnd)
		if strings.Contains(tc.where, "engines") {
			at = time.Unix(0, 0).Add(15 * time.Minute)
		}
		q, err := engine.NewInstantQuery(context.Background(), st, nil, s, at)
		if err != nil {
			t.Fatal(err)
		}
		res := q.Exec(context.Background())
		vec, err := res.Vector()
		if err != nil {
			t.Errorf("%s: %s: %v", tc.file, tc.where, err)
			q.Close()
			continue
		}
		var got *float64
		for _, smp := range vec {
			if tc.labels == "" || smp.Metric.String() == tc.labels {
				got = &smp.F
			}
		}
		switch {
		case got == nil:
			t.Errorf("%s: %s: no series %s in %v", tc.file, tc.where, tc.labels, vec)
		case *got < tc.want*0.999 || *got > tc.want*1.001:
			t.Errorf("%s: %s = %g, want %g", tc.file, tc.where, *got, tc.want)
		}
		q.Close()
	}
}
