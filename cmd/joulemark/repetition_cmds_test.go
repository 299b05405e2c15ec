package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/joulemark/joulemark/internal/contract"
	"github.com/joulemark/joulemark/internal/reportcsv/csvtest"
	"github.com/joulemark/joulemark/report"
)

// repReport is a crafted report of repetition i of n of group at
// concurrency conc (group "": a run of its own, named "plain"), with
// steady-state J/token |ss|; ss < 0 makes it invalid.
func repReport(group string, i, n, conc int, ss float64) report.Report {
	id := "plain"
	if group != "" {
		id = fmt.Sprintf("%s-rep%d", group, i)
	}
	r := report.Report{RunID: id, Valid: ss > 0, Run: &report.RunIdentity{RunIdentity: contract.RunIdentity{RunID: id, Model: "m",
		LoadMode: "closed", Concurrency: conc, RepetitionGroup: group, Repetition: i, Repetitions: n}}}
	v, tput := math.Abs(ss), 1000/math.Abs(ss)
	r.SteadyState.Reached, r.SteadyState.JoulesPerToken, r.ThroughputTokensPerSecond = true, &v, &tput
	r.Tokens.FormalOutput = 1000
	if ss < 0 {
		r.Flags = []report.Flag{{Code: "release_not_closed", Excluding: true}}
	}
	return r
}

// repReports writes the reports of group's repetitions, one per ss, into
// dir and returns their paths.
func repReports(t *testing.T, dir, group string, conc int, ss ...float64) []string {
	t.Helper()
	var reps []report.Report
	for i, v := range ss {
		reps = append(reps, repReport(group, i+1, len(ss), conc, v))
	}
	return writeReports(t, dir, reps...)
}

func writeReports(t *testing.T, dir string, reps ...report.Report) []string {
	t.Helper()
	var paths []string
	for _, r := range reps {
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, r.RunID+".json")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	return paths
}

// recommend pools a repetition group into one candidate: its median
// (0.5) loses to a plain run (0.45) its best repetition (0.42) would beat;
// JSON and CSV name the pool, CSV keeps a row per repetition.
func TestRecommendPoolsRepetitions(t *testing.T) {
	dir := t.TempDir()
	paths := append(repReports(t, dir, "g", 8, 0.42, 0.50, -0.30, 0.52), repReports(t, dir, "", 8, 0.45)...)
	out, err := runOut(t, append([]string{"recommend"}, paths...)...)
	if err != nil || !strings.Contains(out, "recommended: plain") || !strings.Contains(out, "median [min-max] of 3 valid of 4 repetitions; not pooled: g-rep3") ||
		strings.Contains(out, "g-rep1 ") {
		t.Errorf("recommend text (%v):\n%s", err, out)
	}
	out, err = runOut(t, append([]string{"recommend", "--format", "json"}, paths...)...)
	var js struct {
		Recommended string
		Runs        []struct {
			RunID       string `json:"run_id"`
			Repetitions *struct{ Group string }
		}
	}
	if jerr := json.Unmarshal([]byte(out), &js); err != nil || jerr != nil || js.Recommended != "plain" || len(js.Runs) != 2 ||
		js.Runs[0].RunID != "g" || js.Runs[0].Repetitions == nil || js.Runs[0].Repetitions.Group != "g" {
		t.Errorf("recommend json (%v, %v): %+v\n%s", err, jerr, js, out)
	}
	out, err = runOut(t, append([]string{"recommend", "--format", "csv"}, paths...)...)
	header, rows := csvtest.Rows(t, out)
	group, note := slices.Index(header, "recommend.repetition_group"), slices.Index(header, "recommend.repetitions")
	if err != nil || len(rows) != 5 || group < 0 || note < 0 || rows[2][group] != "g" || rows[2][0] != "excluded" ||
		!strings.Contains(rows[2][note], "3 valid of 4") || rows[4][group] != "" || rows[4][0] != "recommended" {
		t.Errorf("recommend csv (%v): %v %v", err, header, rows)
	}
}

// diff takes each side's repetitions joined by commas: a side is named
// after its group, its invalid repetition is left out of the median, JSON
// and CSV name the groups, and a side of two groups is bad usage.
func TestDiffPoolsRepetitions(t *testing.T) {
	dir := t.TempDir()
	before := strings.Join(repReports(t, dir, "base", 8, 0.300, 0.301, 0.299), ",")
	after := strings.Join(repReports(t, dir, "cand", 8, 0.317, -0.20, 0.316, 0.318), ",")
	out, err := runOut(t, "diff", before, after)
	if err == nil || !strings.Contains(err.Error(), "of cand against base") || !strings.Contains(out, "after:  cand (median [min-max] of 3 valid of 4 repetitions; not pooled: cand-rep2") ||
		!strings.Contains(out, "0.317 (0.316–0.318)") || !strings.Contains(out, "ranges apart (p=0.100 n=3+3)") {
		t.Errorf("diff text (%v):\n%s", err, out)
	}
	out, _ = runOut(t, "diff", "--format", "json", before, after)
	var js struct {
		Before, After     string
		AfterRepetitions  *struct{ Group string } `json:"after_repetitions"`
		BeforeRepetitions *struct{ Group string } `json:"before_repetitions"`
	}
	if err := json.Unmarshal([]byte(out), &js); err != nil || js.Before != "base" || js.After != "cand" || js.AfterRepetitions == nil || js.BeforeRepetitions == nil {
		t.Errorf("diff json (%v): %+v\n%s", err, js, out)
	}
	out, _ = runOut(t, "diff", "--format", "csv", before, after)
	header, rows := csvtest.Rows(t, out)
	if len(rows) == 0 || header[0] != "before_run" || rows[0][0] != "base" || rows[0][1] != "cand" {
		t.Errorf("diff csv: %v %v", header, rows)
	}
	_, err = runOut(t, "diff", before+","+strings.Split(after, ",")[0], after)
	if err == nil || !strings.Contains(err.Error(), "BEFORE holds the repetitions of 2 configurations") || exitCode(err) != exitUsage {
		t.Errorf("two groups a side: %v", err)
	}
}

// plan takes a load point's repetitions as one point on their medians:
// concurrency 8's median TTFT (550 ms) fails the SLO its best repetition
// (450 ms) meets, so concurrency 4 is the admission limit.
func TestPlanPoolsRepetitions(t *testing.T) {
	dir := t.TempDir()
	var paths []string
	for _, pt := range []struct {
		group string
		conc  int
		ttft  []float64
	}{{"s-c4", 4, []float64{0.20, 0.22, 0.21}}, {"s-c8", 8, []float64{0.45, 0.55, 0.60}}} {
		var reps []report.Report
		for i, ttft := range pt.ttft {
			r := repReport(pt.group, i+1, len(pt.ttft), pt.conc, 0.4)
			r.Stages = map[string]report.Stage{"formal": {DurationSeconds: 100}}
			r.Requests.Succeeded = 50 * pt.conc
			w := 2.0
			r.Latency.LatencySeconds.P50, r.Latency.TTFTSeconds.P95 = &w, &ttft
			reps = append(reps, r)
		}
		paths = append(paths, writeReports(t, dir, reps...)...)
	}
	out, err := runOut(t, append([]string{"plan", "--target-peak-rate", "10", "--slo.ttft-p95", "500ms"}, paths...)...)
	if err != nil || !strings.Contains(out, "admission limit: s-c4") || !strings.Contains(out, "latency.ttft_seconds.p95 550 ms > 500 ms") ||
		!strings.Contains(out, "repetition group s-c4: λ, W and the energy figures below are medians over its valid repetitions: median [min-max] of 3 valid of 3") {
		t.Errorf("plan text (%v):\n%s", err, out)
	}
	out, err = runOut(t, append([]string{"plan", "--format", "json", "--target-peak-rate", "10", "--slo.ttft-p95", "500ms"}, paths...)...)
	var js struct {
		Points []struct {
			RunID       string `json:"run_id"`
			Repetitions *struct{ Group string }
		}
	}
	if jerr := json.Unmarshal([]byte(out), &js); err != nil || jerr != nil || len(js.Points) != 2 || js.Points[1].Repetitions == nil || js.Points[1].Repetitions.Group != "s-c8" {
		t.Errorf("plan json (%v, %v): %+v", err, jerr, js)
	}
}

// A side given as a repetition group's id is that group's reports under
// --runs-dir, as bench --repeat archived them.
func TestDiffGroupIDs(t *testing.T) {
	dir := t.TempDir()
	for _, g := range []struct {
		id string
		ss []float64
	}{{"base", []float64{0.300, 0.301, 0.299}}, {"cand", []float64{0.317, 0.316, 0.318}}} {
		for i, ss := range g.ss {
			r := repReport(g.id, i+1, len(g.ss), 8, ss)
			d := filepath.Join(dir, r.RunID, "report")
			if err := os.MkdirAll(d, 0o755); err != nil {
				t.Fatal(err)
			}
			writeReports(t, d, r)
			if err := os.Rename(filepath.Join(d, r.RunID+".json"), filepath.Join(d, report.FileJSON)); err != nil {
				t.Fatal(err)
			}
		}
	}
	out, err := runOut(t, "diff", "--runs-dir", dir, "base", "cand")
	if err == nil || !strings.Contains(out, "before: base (median [min-max] of 3 valid of 3 repetitions; agree)") ||
		!strings.Contains(out, "after:  cand (median [min-max] of 3 valid of 3 repetitions; agree)") {
		t.Errorf("diff base cand (%v):\n%s", err, out)
	}
	if _, err := runOut(t, "diff", "--runs-dir", dir, "base", "nope"); err == nil || !strings.Contains(err.Error(), "nor is it a repetition group") {
		t.Errorf("unknown group: %v", err)
	}
}
