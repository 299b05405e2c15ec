package e2e

import (
	"context"
	"regexp"
	"testing"
	"time"

	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"

	"github.com/joulemark/joulemark/dashboards"
)

// documentedTimeInterval is the Grafana data source's scrape interval
// (timeInterval) that docs/deploy.md and deploy/grafana set.
const documentedTimeInterval = time.Second

// needsOutsideRun are the queries the external run cannot feed, and why:
// the sim exporter reads no RAPL zones and no kubelet runs (so no energy
// per pod, per model or unallocated), and the formal phase (about 10 s)
// may span no evaluation of the 15 s rule groups. Queries of recording rules
// are evaluated and logged, not required: whether a 15 s evaluation fell
// inside the short run is chance. The fixture of dashboards/eval_test.go
// covers all of them.
var needsOutsideRun = map[string]string{
	`benchmark-run.json: panel "Host power (RAPL)" query A`:                         "RAPL",
	`benchmark-run.json: panel "Formal-stage host energy" query A`:                  "RAPL",
	`benchmark-run.json: panel "Live J/token" query A`:                              "a formal phase longer than the rule evaluation interval",
	`fleet-energy.json: panel "Live J/token (engines)" query A`:                     "kubelet",
	`fleet-energy.json: panel "Live J/token per model (engines)" query A`:           "kubelet",
	`fleet-energy.json: panel "Live J/token per pod (engines)" query A`:             "kubelet",
	`fleet-energy.json: panel "Energy rate per namespace" query A`:                  "kubelet",
	`fleet-energy.json: panel "Unallocated and idle-allocated energy rate" query A`: "kubelet",
	`fleet-energy.json: panel "Unallocated and idle-allocated energy rate" query B`: "kubelet",
	`fleet-energy.json: panel "(Re)starts and their energy" query A`:                "kubelet",
	`fleet-energy.json: variable namespace`:                                         "kubelet",
	`fleet-energy.json: variable pod`:                                               "kubelet",
}

// checkDashboards evaluates every dashboard query on the real Prometheus
// after the run, as Grafana would over the run's time range at the
// documented data source interval, and fails on an empty result.
func checkDashboards(ctx context.Context, t *testing.T, ext *external) {
	targets, err := dashboards.Targets()
	if err != nil {
		t.Fatal(err)
	}
	pa := promAPI(t, ext.prom.URL)
	view := dashboards.View{From: ext.benchStart, To: time.Now(), MaxDataPoints: 1280, DataSourceInterval: documentedTimeInterval}
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
		cover, err := evalCoverage(ctx, pa, expr, tg.Instant, view, step)
		evaluated++
		switch {
		case err != nil:
			t.Errorf("%s: %v\n  %s", where, err, expr)
		case cover == 0 && needsOutsideRun[where] != "":
			empty++
			t.Logf("%s: empty, needs %s", where, needsOutsideRun[where])
		case cover < minCoverage && recordingRule.MatchString(expr):
			t.Logf("%s: data at %.0f%% of the steps (recording rule, 15 s evaluation)", where, 100*cover)
		case cover < minCoverage:
			t.Errorf("%s: data at %.0f%% of the steps after the run, want %.0f%% (step %v)\n  %s", where, 100*cover, 100*minCoverage, step, expr)
		}
	}
	for where := range needsOutsideRun {
		if !seen[where] {
			t.Errorf("needsOutsideRun names %s, which no dashboard has", where)
		}
	}
	t.Logf("%d dashboard queries evaluated over %v at a %v data source interval, %d empty for want of RAPL or a kubelet",
		evaluated, view.To.Sub(view.From).Round(time.Second), documentedTimeInterval, empty)
}

// minCoverage is the share of a range query's steps that must hold a value:
// the run's phases cover most of the view, the formal phase alone about
// half; a window shorter than its series' interval leaves a few steps.
const minCoverage = 0.25

// recordingRule matches a recording rule's name (level:metric:operations).
var recordingRule = regexp.MustCompile(`\b[a-z_]+:joulemark_[a-z_]+:[a-z0-9_]+`)

// evalCoverage runs expr as Grafana would and returns the share of steps
// with a value in some series: an instant query counts 1 when it returns a
// series, a range query over the view at step counts the steps.
func evalCoverage(ctx context.Context, pa promv1.API, expr string, instant bool, v dashboards.View, step time.Duration) (float64, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if instant {
		val, _, _, err := pa.Query(ctx, expr, v.To)
		if err != nil {
			return 0, err
		}
		if vec, _ := val.(model.Vector); len(vec) > 0 {
			return 1, nil
		}
		return 0, nil
	}
	// Grafana aligns the range to the step.
	r := promv1.Range{Start: v.From.Truncate(step), End: v.To.Truncate(step), Step: step}
	val, _, _, err := pa.QueryRange(ctx, expr, r)
	if err != nil {
		return 0, err
	}
	m, _ := val.(model.Matrix)
	steps := map[model.Time]bool{}
	for _, s := range m {
		for _, p := range s.Values {
			steps[p.Timestamp] = true
		}
	}
	return float64(len(steps)) / float64(r.End.Sub(r.Start)/step+1), nil
}
