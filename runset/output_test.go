package runset

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/joulemark/joulemark/internal/reportcsv/csvtest"
)

// allReports loads every testdata/runs report: their files and runs.
func allReports(t *testing.T) ([]string, []*Run) {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join("testdata", "runs", "*", "report.json"))
	if len(files) < 3 {
		t.Fatal("no fixtures")
	}
	runs, err := loadReports(files, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return files, runs
}

// pareto and recommend as CSV: one row per run, the command's columns
// first, then report.json's keys; every report cell reads back to the
// value in the report, and the command's first column agrees with the
// JSON.
func TestParetoRecommendCSV(t *testing.T) {
	files, runs := allReports(t)
	docs := csvtest.Reports(t, files)
	classes := Pareto(NewSet(runs).Pooled(), ParetoMetrics)
	rec := Recommend(runs, []Constraint{{Metric: TTFTP95, Bound: 10, Upper: true, Flag: "--max-ttft-p95"}}, -1, ParetoMetrics, SteadyStateJPT)
	for _, tc := range []struct {
		name             string
		csv, json        func(w *bytes.Buffer) error
		lead             []string
		jsonRuns, jsonAt string // where the JSON lists the runs; the key compared with lead[0]
	}{
		{"pareto", func(w *bytes.Buffer) error { return WriteParetoCSV(w, classes) },
			func(w *bytes.Buffer) error { return WriteParetoJSON(w, classes, ParetoMetrics) },
			[]string{"pareto.rank", "pareto.front", "pareto.excluded", "pareto.dominated_by", "pareto.missing"}, "", "rank"},
		{"recommend", func(w *bytes.Buffer) error { return WriteRecommendCSV(w, rec) },
			func(w *bytes.Buffer) error { return WriteRecommendJSON(w, rec, ParetoMetrics) },
			[]string{"recommend.status", "recommend.reason"}, "runs", "status"},
	} {
		var c, j bytes.Buffer
		if err := tc.csv(&c); err != nil {
			t.Fatalf("%s csv: %v", tc.name, err)
		}
		if err := tc.json(&j); err != nil {
			t.Fatalf("%s json: %v", tc.name, err)
		}
		jv := csvtest.Decode(t, j.Bytes())
		list, _ := jv.([]any)
		if tc.jsonRuns != "" {
			list, _ = jv.(map[string]any)[tc.jsonRuns].([]any)
		}
		if n := csvtest.CheckRuns(t, c.String(), tc.lead, csvtest.ByRun(list, tc.jsonAt), docs); n < 100 {
			t.Errorf("%s: %d cells checked", tc.name, n)
		}
	}
}

// plan and diff as CSV: one row per load point / tracked metric, equal to
// the JSON.
func TestPlanDiffFormats(t *testing.T) {
	sweep, _ := filepath.Glob(filepath.Join("testdata", "sweep", "*", "report.json"))
	runs, err := loadReports(sweep, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := MakePlan(runs, PlanOptions{TargetPeakRateRPS: 100, RestartsPerDay: 1,
		SLOs: []Constraint{{Metric: TTFTP95, Bound: 0.5, Upper: true, Flag: "--slo.ttft-p95"}}})
	if err != nil {
		t.Fatal(err)
	}
	var js, out bytes.Buffer
	if err := WritePlanJSON(&js, p); err != nil {
		t.Fatal(err)
	}
	if err := WritePlanCSV(&out, p); err != nil {
		t.Fatal(err)
	}
	plan := csvtest.Decode(t, js.Bytes()).(map[string]any)
	points := plan["points"].([]any)
	header, rows := csvtest.Rows(t, out.String())
	if len(rows) != len(points) || header[0] != "plan.admission_limit" {
		t.Fatalf("plan: %d rows for %d points, header %v", len(rows), len(points), header)
	}
	admission, _ := csvtest.Lookup(plan, "admission_limit.run_id")
	for i, row := range rows {
		checkCells(t, "plan point", i, header[1:], row[1:], points[i])
		id, _ := csvtest.Lookup(points[i], "run_id")
		if (row[0] == "true") != (id == admission) {
			t.Errorf("plan point %s: admission_limit %s, JSON says %s", id, row[0], admission)
		}
	}

	d := DiffRuns(NewSet([]*Run{loadDiff(t, "before.json")}), NewSet([]*Run{loadDiff(t, "after-bad.json")}), DiffMetrics, 5)
	js.Reset()
	out.Reset()
	if err := WriteDiffJSON(&js, d); err != nil {
		t.Fatal(err)
	}
	if err := WriteDiffCSV(&out, d); err != nil {
		t.Fatal(err)
	}
	dv := csvtest.Decode(t, js.Bytes()).(map[string]any)
	if n, _ := csvtest.Lookup(dv, "regressions"); n != "4" {
		t.Errorf("diff JSON regressions %s", n)
	}
	changes := dv["changes"].([]any)
	header, rows = csvtest.Rows(t, out.String())
	if len(rows) != len(changes) {
		t.Fatalf("diff: %d rows for %d metrics", len(rows), len(changes))
	}
	for i, row := range rows {
		checkCells(t, "diff metric", i, header[2:], row[2:], changes[i])
	}
	if !strings.Contains(out.String(), "steady_state.joules_per_token,min,0.3,0.33,10") {
		t.Errorf("diff CSV lacks the steady-state row:\n%s", out.String())
	}
}

// checkCells checks that each cell of row reads back to the value of its
// key in the decoded JSON v.
func checkCells(t *testing.T, what string, i int, keys, row []string, v any) {
	t.Helper()
	for j, key := range keys {
		if want, _ := csvtest.Lookup(v, key); row[j] != want {
			t.Errorf("%s %d %s = %q, JSON %q", what, i, key, row[j], want)
		}
	}
}
