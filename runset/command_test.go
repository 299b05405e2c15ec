package runset

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// sweepReports loads runset/compare's sweep fixtures: three llama loads
// and one qwen run.
func sweepReports(t *testing.T) []*Run {
	t.Helper()
	var paths []string
	for _, n := range []string{"sweep-c4", "sweep-c12", "sweep-c24", "sweep-c12-qwen"} {
		paths = append(paths, filepath.Join("compare", "testdata", "reports", n+".json"))
	}
	runs, err := loadReports(paths, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return runs
}

// pareto --group-by classifies each group apart, in each format.
func TestWriteParetoGroups(t *testing.T) {
	runs := sweepReports(t)
	var buf bytes.Buffer
	if err := WriteParetoGroups(&buf, "text", "run.model", runs); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	if !strings.Contains(out, "group llama-3.1-8b (run.model):") || !strings.Contains(out, "group qwen2.5-7b (run.model):") {
		t.Errorf("text:\n%s", out)
	}
	// within the qwen group its only run is on the front
	if i := strings.Index(out, "group qwen2.5-7b"); i < 0 || !regexp.MustCompile(`sweep-c12-qwen +concurrency 12 +front`).MatchString(out[i:]) {
		t.Errorf("qwen group lacks its front run:\n%s", out)
	}

	buf.Reset()
	if err := WriteParetoGroups(&buf, "json", "run.model", runs); err != nil {
		t.Fatal(err)
	}
	var groups []struct {
		Group  string          `json:"group"`
		Pareto json.RawMessage `json:"pareto"`
	}
	if err := json.Unmarshal(buf.Bytes(), &groups); err != nil || len(groups) != 2 || groups[1].Group != "qwen2.5-7b" {
		t.Errorf("json: %v %+v\n%s", err, groups, buf.String())
	}

	buf.Reset()
	if err := WriteParetoGroups(&buf, "csv", "run.model", runs); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&buf).ReadAll()
	if err != nil || len(rows) != 5 || rows[0][0] != "pareto.group" {
		t.Fatalf("csv: %v, %d rows, header %v", err, len(rows)-1, rows[0])
	}
	col := map[string]int{}
	for i, h := range rows[0] {
		col[h] = i
	}
	for _, r := range rows[1:] {
		if r[col["run.model"]] != r[0] {
			t.Errorf("row of %s in group %q", r[col["run.model"]], r[0])
		}
		if r[0] == "qwen2.5-7b" && r[col["pareto.front"]] != "true" {
			t.Errorf("the qwen group's only run is not on its front: %v", r)
		}
	}
	if pgs := ParetoGroups(runs, "run.model"); len(pgs) != 2 || pgs[1].Name != "qwen2.5-7b" || len(pgs[1].Classes) != 1 {
		t.Errorf("ParetoGroups: %+v", pgs)
	}
	if pgs := ParetoGroups(runs, ""); len(pgs) != 1 || len(pgs[0].Classes) != 4 {
		t.Errorf("ParetoGroups without groups: %+v", pgs)
	}
}

// recommend --group-by recommends within each group, and fails only when
// no group has a recommendation.
func TestWriteRecommendGroups(t *testing.T) {
	runs := sweepReports(t)
	var cons Constraints
	ttft := 500 * time.Millisecond
	cons.AddDuration("--max-ttft-p95", &ttft, TTFTP95, true)
	var buf bytes.Buffer
	if err := WriteRecommendGroups(&buf, "run.model", runs, cons, -1, SteadyStateJPT); err != nil {
		t.Fatal(err)
	}
	if out := buf.String(); strings.Count(out, "recommended: ") != 2 || !strings.Contains(out, "recommended: sweep-c12-qwen") {
		t.Errorf("want one recommendation per model:\n%s", out)
	}
	tiny := 1e-9
	cons.Add("--max-joules-per-token", &tiny, SteadyStateJPT, true)
	buf.Reset()
	if err := WriteRecommendGroups(&buf, "run.model", runs, cons, -1, SteadyStateJPT); !errors.Is(err, ErrNoSurvivor) ||
		!strings.Contains(err.Error(), "llama-3.1-8b; qwen2.5-7b") {
		t.Errorf("no survivor in any group: %v", err)
	}
}

// Every format of recommend fails with ErrNoSurvivor when nothing is
// recommended, after writing its output.
func TestWriteRecommendNoSurvivor(t *testing.T) {
	runs := sweepReports(t)
	tiny := 1e-9
	var cons Constraints
	cons.Add("--max-joules-per-token", &tiny, SteadyStateJPT, true)
	rec := Recommend(runs, cons, -1, ParetoMetrics, SteadyStateJPT)
	for _, format := range []string{"text", "json", "csv"} {
		var buf bytes.Buffer
		if err := WriteRecommend(&buf, format, rec); !errors.Is(err, ErrNoSurvivor) || !strings.Contains(buf.String(), "--max-joules-per-token") {
			t.Errorf("%s: %v\n%s", format, err, buf.String())
		}
	}
}

// Constraints keeps only the flags given; durations become seconds.
func TestConstraints(t *testing.T) {
	var cs Constraints
	half, d := 0.5, 250*time.Millisecond
	cs.Add("--a", nil, Goodput, false)
	cs.AddDuration("--b", nil, TTFTP95, true)
	cs.Add("--min-goodput", &half, Goodput, false)
	cs.AddDuration("--max-ttft-p95", &d, TTFTP95, true)
	type bound struct {
		key, flag string
		v         float64
		upper     bool
	}
	var got []bound
	for _, c := range cs {
		got = append(got, bound{c.Metric.Key, c.Flag, c.Bound, c.Upper})
	}
	if want := []bound{{Goodput.Key, "--min-goodput", 0.5, false}, {TTFTP95.Key, "--max-ttft-p95", 0.25, true}}; !slices.Equal(got, want) {
		t.Errorf("got %+v", cs)
	}
}

// plan --out: the plan's JSON in a new file, never overwritten.
func TestWritePlanFile(t *testing.T) {
	p := Plan{Points: []PlanPoint{{RunID: "c4"}}}
	path := filepath.Join(t.TempDir(), "plan.json")
	if err := WritePlanFile(path, p); err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	if err := WritePlanJSON(&want, p); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(path); err != nil || !bytes.Equal(got, want.Bytes()) {
		t.Errorf("plan.json (%v):\n%s", err, got)
	}
	if err := WritePlanFile(path, Plan{}); err == nil || !strings.Contains(err.Error(), "refusing to overwrite") {
		t.Errorf("second write: %v", err)
	}
}
