package e2e

import (
	"context"
	"regexp"
	"testing"
	"time"

	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"

	"github.com/joulemark/joulemark/dashboards"
	"github.com/joulemark/joulemark/demo"
	"github.com/joulemark/joulemark/internal/promserver"
)

// documentedTimeInterval is the Grafana data source's scrape interval
// (timeInterval) that docs/deploy.md and deploy/grafana set.
const documentedTimeInterval = time.Second

// needsOutsideRun are the queries the external run cannot feed, and why:
// the sim exporter reads no RAPL zones and no kubelet runs (so no energy
// per pod, per model or unallocated), and neither run exposes the cost
// inputs (joulemark_pue, joulemark_energy_price_per_kwh,
// joulemark_carbon_intensity_gco2e_per_kwh: the operator's gauges), so the
// cost panels rest on dashboards/eval_test.go's fixture, which has them. The kubelet ones are required of the
// embedded run, whose simulated kubelet lists pods (checkDashboardsKubelet);
// no run here has RAPL, so the RAPL ones rest on dashboards/eval_test.go's
// fixture. Queries of recording rules are evaluated and logged, not
// required: whether a 15 s evaluation fell inside the 10 s formal phase is
// chance.
var needsOutsideRun = map[string]string{
	`benchmark-run.json: panel "Host power (RAPL)" query A`:                                             "RAPL",
	`benchmark-run.json: panel "Formal-stage host energy" query A`:                                      "RAPL",
	`fleet-energy.json: panel "Live J/token (engines)" query A`:                                         "kubelet",
	`fleet-energy.json: panel "Live J/token per model (engines)" query A`:                               "kubelet",
	`fleet-energy.json: panel "Live J/token per pod (engines)" query A`:                                 "kubelet",
	`fleet-energy.json: panel "Energy rate per namespace" query A`:                                      "kubelet",
	`fleet-energy.json: panel "Unallocated and idle-allocated energy rate" query A`:                     "kubelet",
	`fleet-energy.json: panel "Unallocated and idle-allocated energy rate" query B`:                     "kubelet",
	`fleet-energy.json: panel "(Re)starts and their energy" query A`:                                    "kubelet",
	`fleet-energy.json: panel "Energy cost per hour by model and namespace (GPU energy × PUE)" query A`: "cost inputs",
	`fleet-energy.json: panel "Energy cost per hour by model and namespace (GPU energy × PUE)" query B`: "cost inputs",
	`fleet-energy.json: panel "Emissions per hour by model and namespace (GPU energy × PUE)" query A`:   "cost inputs",
	`fleet-energy.json: panel "Emissions per hour by model and namespace (GPU energy × PUE)" query B`:   "cost inputs",
	`fleet-energy.json: variable namespace`:                                                             "kubelet",
	`fleet-energy.json: variable pod`:                                                                   "kubelet",
}

// checkDashboards evaluates every dashboard query on the real Prometheus
// after the run, as Grafana would at the documented data source interval
// over the run's time range, and fails on a query with no value. The
// formal phase (about 10 s) is too short to ask for more than one value:
// two bench pushes 5 s apart may not both fall in it.
func checkDashboards(ctx context.Context, t *testing.T, ext *external) {
	targets, err := dashboards.Targets()
	if err != nil {
		t.Fatal(err)
	}
	pa := promAPI(t, ext.prom.URL)
	view := dashboards.View{From: ext.benchStart, To: dashboardViewEnd(ext.benchEnd, time.Now()), MaxDataPoints: 1280, DataSourceInterval: documentedTimeInterval}
	vars := map[string]string{"run_id": ext.runID, "node": ".*", "gpu": ".*", "namespace": ".*", "pod": ".*", "model": ".*"}
	seen := map[string]bool{}
	var evaluated, empty int
	for _, tg := range targets {
		where := tg.Dashboard + ": " + tg.Where
		seen[where] = true
		defaults, err := dashboards.Defaults(tg.Dashboard)
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range vars {
			defaults[k] = v
		}
		expr, step, err := tg.Expand(view, defaults)
		if err != nil {
			t.Error(err)
			continue
		}
		n, err := evalSeries(ctx, pa, expr, tg.Instant, view, step)
		evaluated++
		switch {
		case err != nil:
			t.Errorf("%s: %v\n  %s", where, err, expr)
		case n == 0 && needsOutsideRun[where] != "":
			empty++
			t.Logf("%s: empty, needs %s", where, needsOutsideRun[where])
		case n == 0 && recordingRule.MatchString(expr):
			t.Logf("%s: empty (recording rule, 15 s evaluation)", where)
		case n == 0:
			t.Errorf("%s: no value over the run (step %v)\n  %s", where, step, expr)
		}
	}
	for where := range needsOutsideRun {
		if !seen[where] {
			t.Errorf("needsOutsideRun names %s, which no dashboard has", where)
		}
	}
	t.Logf("%d dashboard queries evaluated over %v at a %v data source interval, %d empty for want of RAPL, a kubelet or cost inputs",
		evaluated, view.To.Sub(view.From).Round(time.Second), documentedTimeInterval, empty)
	if t.Failed() {
		logRawSamples(ctx, t, pa, `joulemark_bench_requests_total{run_id="`+ext.runID+`"}`, view)
	}
}

// logRawSamples logs every stored sample of sel over the view, with its
// timestamp: what a failed rate() had to work with.
func logRawSamples(ctx context.Context, t *testing.T, pa promv1.API, sel string, v dashboards.View) {
	rng := v.To.Sub(v.From) + time.Minute
	val, _, _, err := pa.Query(ctx, sel+"["+model.Duration(rng.Round(time.Second)).String()+"]", v.To)
	if err != nil {
		t.Logf("raw samples of %s: %v", sel, err)
		return
	}
	t.Logf("raw samples of %s (bench started %s):\n%v", sel, v.From.Format(time.RFC3339Nano), val)
}

// dashboardViewEnd is the end of the time range the dashboards are
// evaluated over: now, but no earlier than one rate window of the slowest
// producer after the bench ended. Grafana aligns a range's end down to the
// step (5 s for the bench's series), so a range ending right after the
// bench cuts its last aggregate pushes off and a rate over what is left
// holds one sample; a person who opens the dashboard a little later sees
// the whole run. Prometheus evaluates the steps past now on the samples it
// has.
func dashboardViewEnd(benchEnd, now time.Time) time.Time {
	settled := benchEnd.Add(4 * dashboards.SlowestProducer)
	if now.After(settled) {
		return now
	}
	return settled
}

// recordingRule matches a recording rule's name (level:metric:operations).
var recordingRule = regexp.MustCompile(`\b[a-z_]+:joulemark_[a-z_]+:[a-z0-9_]+`)

// evalSeries runs expr as Grafana would: an instant query at the end of
// the view, or a range query over it at step (aligned to the step); it
// returns how many series came back.
func evalSeries(ctx context.Context, pa promv1.API, expr string, instant bool, v dashboards.View, step time.Duration) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if instant {
		val, _, _, err := pa.Query(ctx, expr, v.To)
		if err != nil {
			return 0, err
		}
		vec, _ := val.(model.Vector)
		return len(vec), nil
	}
	r := promv1.Range{Start: v.From.Truncate(step), End: v.To.Truncate(step), Step: step}
	val, _, _, err := pa.QueryRange(ctx, expr, r)
	if err != nil {
		return 0, err
	}
	m, _ := val.(model.Matrix)
	return len(m), nil
}

// checkDashboardsKubelet evaluates the queries that need a kubelet on the
// embedded run's TSDB (its simulated kubelet lists the engine pods), served
// read-only by the embedded Prometheus, and fails on an empty one.
func checkDashboardsKubelet(ctx context.Context, t *testing.T, res *demo.Result) {
	if res.TSDBDir == "" || res.Bench == nil {
		t.Fatal("the embedded run left no TSDB")
	}
	srv, err := promserver.Start(ctx, promserver.Options{Dir: res.TSDBDir, ListenAddress: "127.0.0.1:0", ReadOnly: true, DisableRemoteWrite: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	targets, err := dashboards.Targets()
	if err != nil {
		t.Fatal(err)
	}
	pa := promAPI(t, srv.URL())
	view := dashboards.View{From: res.Bench.Start, To: time.Now(), MaxDataPoints: 1280, DataSourceInterval: documentedTimeInterval}
	vars := map[string]string{"run_id": res.RunID, "node": ".*", "gpu": ".*", "namespace": ".*", "pod": ".*", "model": ".*"}
	var checked int
	for _, tg := range targets {
		where := tg.Dashboard + ": " + tg.Where
		if needsOutsideRun[where] != "kubelet" {
			continue
		}
		checked++
		expr, step, err := tg.Expand(view, vars)
		if err != nil {
			t.Error(err)
			continue
		}
		n, err := evalSeries(ctx, pa, expr, tg.Instant, view, step)
		switch {
		case err != nil:
			t.Errorf("%s: %v\n  %s", where, err, expr)
		case n == 0:
			t.Errorf("%s: no value over the embedded run with its kubelet (step %v)\n  %s", where, step, expr)
		}
	}
	t.Logf("%d kubelet-dependent dashboard queries evaluated on the embedded run", checked)
}
