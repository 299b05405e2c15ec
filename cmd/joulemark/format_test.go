package main

import (
	"bytes"
	"encoding/csv"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/joulemark/joulemark/internal/reportcsv/csvtest"
)

// runOut runs a command of the CLI with its output in a buffer.
func runOut(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cli := parseCLI(t, args...)
	var buf bytes.Buffer
	var err error
	switch args[0] {
	case "compare":
		cli.Compare.stdout = &buf
		err = cli.Compare.Run(&cli.Globals)
	case "pareto":
		cli.Pareto.stdout = &buf
		err = cli.Pareto.Run(&cli.Globals)
	case "recommend":
		cli.Recommend.stdout = &buf
		err = cli.Recommend.Run(&cli.Globals)
	case "diff":
		cli.Diff.stdout = &buf
		err = cli.Diff.Run(&cli.Globals)
	case "plan":
		cli.Plan.stdout = &buf
		err = cli.Plan.Run(&cli.Globals)
	default:
		t.Fatalf("no such command %s", args[0])
	}
	return buf.String(), err
}

func readCSV(t *testing.T, s string) (header []string, rows [][]string) {
	t.Helper()
	recs, err := csv.NewReader(strings.NewReader(s)).ReadAll()
	if err != nil || len(recs) < 2 {
		t.Fatalf("CSV: %v (%d records):\n%s", err, len(recs), s)
	}
	return recs[0], recs[1:]
}

// compare, pareto and recommend --format csv: one row per run, the
// command's columns first, then report.json's keys; every report cell reads
// back to the value in the report, and the command's columns agree with its
// --format json.
func TestRunsCSV(t *testing.T) {
	reports, _ := filepath.Glob(fixture("runs", "*", "report.json"))
	if len(reports) < 3 {
		t.Fatal("no fixtures")
	}
	docs := map[string]any{} // run_id → report
	for _, f := range reports {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		v := csvtest.Decode(t, b)
		id, _ := csvtest.Lookup(v, "run_id")
		docs[id] = v
	}
	for _, tc := range []struct {
		cmd  []string
		lead []string // the command's own columns
		// jsonRuns is where --format json lists the runs, and the key of
		// the value compared with the first lead column.
		jsonRuns, jsonKey string
	}{
		{[]string{"compare"}, []string{"compare.group", "compare.included", "compare.excluded"}, "runs", "group"},
		{[]string{"pareto"}, []string{"pareto.rank", "pareto.front", "pareto.excluded", "pareto.dominated_by", "pareto.missing"}, "", "rank"},
		{[]string{"recommend", "--max-ttft-p95", "10s"}, []string{"recommend.status", "recommend.reason"}, "runs", "status"},
	} {
		name := tc.cmd[0]
		out, err := runOut(t, append(append(tc.cmd, reports...), "--format", "csv")...)
		if err != nil {
			t.Fatalf("%s --format csv: %v", name, err)
		}
		header, rows := readCSV(t, out)
		if len(rows) != len(reports) {
			t.Errorf("%s: %d rows for %d reports", name, len(rows), len(reports))
		}
		for i, l := range tc.lead {
			if header[i] != l {
				t.Errorf("%s: column %d is %q, want %q", name, i, header[i], l)
			}
		}
		col := map[string]int{}
		for i, h := range header {
			col[h] = i
		}
		js, err := runOut(t, append(append(tc.cmd, reports...), "--format", "json")...)
		if err != nil {
			t.Fatalf("%s --format json: %v", name, err)
		}
		jv := csvtest.Decode(t, []byte(js))
		jsonByRun := map[string]string{}
		list, _ := jv.([]any)
		if tc.jsonRuns != "" {
			list, _ = jv.(map[string]any)[tc.jsonRuns].([]any)
		}
		for _, e := range list {
			id, _ := csvtest.Lookup(e, "run_id")
			jsonByRun[id], _ = csvtest.Lookup(e, tc.jsonKey)
		}
		checked := 0
		for _, row := range rows {
			id := row[col["run_id"]]
			doc, ok := docs[id]
			if !ok {
				t.Fatalf("%s: row of unknown run %q", name, id)
			}
			if got, want := row[0], jsonByRun[id]; got != want {
				t.Errorf("%s: %s %s = %q in CSV, %q in JSON", name, id, tc.lead[0], got, want)
			}
			for _, key := range header[len(tc.lead):] {
				want, ok := csvtest.Lookup(doc, key)
				cell := row[col[key]]
				if !ok && cell != "" || ok && cell != want {
					t.Errorf("%s: run %s column %s = %q, report.json has %q (%v)", name, id, key, cell, want, ok)
				}
				checked++
			}
		}
		if checked < 100 {
			t.Errorf("%s: %d cells checked", name, checked)
		}
	}
}

// plan and diff --format csv|json: one row per load point / tracked
// metric, equal to the JSON.
func TestPlanDiffFormats(t *testing.T) {
	sweep, _ := filepath.Glob(fixture("sweep", "*", "report.json"))
	args := append(append([]string{"plan"}, sweep...), "--target-peak-rate", "100", "--slo.ttft-p95", "500ms")
	js, err := runOut(t, append(args, "--format", "json")...)
	if err != nil {
		t.Fatal(err)
	}
	out, err := runOut(t, append(args, "--format", "csv")...)
	if err != nil {
		t.Fatal(err)
	}
	plan := csvtest.Decode(t, []byte(js)).(map[string]any)
	points := plan["points"].([]any)
	header, rows := readCSV(t, out)
	if len(rows) != len(points) || header[0] != "plan.admission_limit" {
		t.Fatalf("plan: %d rows for %d points, header %v", len(rows), len(points), header)
	}
	admission, _ := csvtest.Lookup(plan, "admission_limit.run_id")
	for i, row := range rows {
		for j, key := range header[1:] {
			if want, _ := csvtest.Lookup(points[i], key); row[j+1] != want {
				t.Errorf("plan point %d %s = %q, JSON %q", i, key, row[j+1], want)
			}
		}
		id, _ := csvtest.Lookup(points[i], "run_id")
		if (row[0] == "true") != (id == admission) {
			t.Errorf("plan point %s: admission_limit %s, JSON says %s", id, row[0], admission)
		}
	}

	before, after := fixture("diff", "before.json"), fixture("diff", "after-bad.json")
	js, err = runOut(t, "diff", before, after, "--format", "json")
	if err == nil || !strings.Contains(err.Error(), "4 regression(s)") {
		t.Fatalf("diff --format json: %v", err)
	}
	out, _ = runOut(t, "diff", before, after, "--format", "csv")
	d := csvtest.Decode(t, []byte(js)).(map[string]any)
	if n, _ := csvtest.Lookup(d, "regressions"); n != "4" {
		t.Errorf("diff JSON regressions %s", n)
	}
	changes := d["changes"].([]any)
	header, rows = readCSV(t, out)
	if len(rows) != len(changes) {
		t.Fatalf("diff: %d rows for %d metrics", len(rows), len(changes))
	}
	for i, row := range rows {
		for j, key := range header[2:] {
			if want, _ := csvtest.Lookup(changes[i], key); row[j+2] != want {
				t.Errorf("diff metric %d %s = %q, JSON %q", i, key, row[j+2], want)
			}
		}
	}
	if !strings.Contains(out, "steady_state.joules_per_token,min,0.3,0.33,10") {
		t.Errorf("diff CSV lacks the steady-state row:\n%s", out)
	}
}

// analyze --format csv writes report.json as one row.
func TestReportCSV(t *testing.T) {
	f := fixture("runs", "vllm-tp1", "report.json")
	b, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := writeReportCSV(&buf, b); err != nil {
		t.Fatal(err)
	}
	header, rows := readCSV(t, buf.String())
	doc := csvtest.Decode(t, b)
	if len(rows) != 1 || header[0] != "schema_version" && header[0] != "run_id" && len(header) < 50 {
		t.Fatalf("%d rows, header %v", len(rows), header[:3])
	}
	for i, key := range header {
		if want, ok := csvtest.Lookup(doc, key); !ok || rows[0][i] != want {
			t.Errorf("%s = %q, report.json %q (%v)", key, rows[0][i], want, ok)
		}
	}
}
