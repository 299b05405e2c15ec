package compare

import (
	"bytes"
	"math"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/joulemark/joulemark/internal/testkit/golden"
	"github.com/joulemark/joulemark/runset"
)

func load(t *testing.T, names ...string) []*runset.Run {
	t.Helper()
	var paths []string
	for _, n := range names {
		paths = append(paths, filepath.Join("testdata", "reports", n+".json"))
	}
	set, err := runset.Load(paths, runset.LoadOptions{RunsDir: filepath.Join("testdata", "runs")})
	if err != nil {
		t.Fatal(err)
	}
	return set.Runs
}

var all = []string{"llama8b-a", "llama8b-b", "llama8b-c", "qwen7b-a", "qwen7b-b", "mistral7b-a", "mistral7b-bad", "phi3-short"}

func TestCompare(t *testing.T) {
	res := Compare(runset.NewSet(load(t, all...)), Options{})
	type want struct {
		ss, life, ratio, rankSS, rankLife float64
		included                          int
	}
	wants := map[string]want{
		"llama8b":   {0.31, 0.47, 0.47 / 0.31, 3, 1, 3},
		"qwen7b":    {0.27, 0.52, 0.52 / 0.27, 2, 3, 2},
		"mistral7b": {0.40, 0.48, 0.48 / 0.40, 4, 2, 1}, // the invalid run is left out
		"phi3":      {0.20, 0.70, 0.70 / 0.20, 1, 4, 1},
	}
	if len(res.Groups) != len(wants) {
		t.Fatalf("%d groups, want %d", len(res.Groups), len(wants))
	}
	near := func(what string, got *float64, want float64) {
		t.Helper()
		if got == nil || math.Abs(*got-want) > 1e-12 {
			t.Errorf("%s = %v, want %v", what, got, want)
		}
	}
	for _, g := range res.Groups {
		w := wants[g.Key]
		near(g.Key+" median ss", g.MedianSS, w.ss)
		near(g.Key+" median life", g.MedianLife, w.life)
		near(g.Key+" ratio", g.Ratio, w.ratio)
		near(g.Key+" rank ss", g.RankSS, w.rankSS)
		near(g.Key+" rank life", g.RankLife, w.rankLife)
		if g.Included != w.included {
			t.Errorf("%s included %d, want %d", g.Key, g.Included, w.included)
		}
	}
	// Σd² = 4+1+4+9 = 18: ρ = 1 − 6·18/(4·(16−1)) = −0.8.
	near("spearman", res.Spearman, -0.8)
	// 100000 vs 160000 tokens: (160000−100000)/160000 = 37.5%.
	c := res.Comparability
	if c.Comparable || c.Min != "phi3-short" || c.Max != "mistral7b-a" || math.Abs(c.Ratio-0.375) > 1e-12 {
		t.Errorf("comparability = %+v", c)
	}
	if !res.Groups[0].Spread.Comparable {
		t.Errorf("llama8b spread %v should be comparable (155000 vs 148000)", res.Groups[0].Spread.Ratio)
	}
	if r := res.Runs[6]; r.Included || r.Excluded != "invalid: steady_state_not_reached" {
		t.Errorf("mistral7b-bad row = %+v", r)
	}

	var buf bytes.Buffer
	if err := WriteText(&buf, res); err != nil {
		t.Fatal(err)
	}
	golden.Compare(t, "compare.golden", buf.Bytes())
	buf.Reset()
	if err := WriteJSON(&buf, res); err != nil {
		t.Fatal(err)
	}
	golden.Compare(t, "compare.json.golden", buf.Bytes())
}

func TestCompareGroupBy(t *testing.T) {
	tests := []struct {
		name     string
		groupBy  string
		groups   []string
		spearman bool
		note     string
	}{
		// A key every report shares: one group, no correlation.
		{"shared key", "measurement.energy_source", []string{"counter"}, false, "needs at least 2 groups with both medians, have 1"},
		// A key no report has: each run is its own group.
		{"missing key", "engine.version", []string{"llama8b-a", "qwen7b-a", "mistral7b-bad"}, true, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := Compare(runset.NewSet(load(t, "llama8b-a", "qwen7b-a", "mistral7b-bad")), Options{GroupBy: tc.groupBy})
			var keys []string
			for _, g := range res.Groups {
				keys = append(keys, g.Key)
			}
			if !reflect.DeepEqual(keys, tc.groups) {
				t.Errorf("groups %v, want %v", keys, tc.groups)
			}
			if (res.Spearman != nil) != tc.spearman || res.SpearmanNote != tc.note {
				t.Errorf("spearman %v note %q", res.Spearman, res.SpearmanNote)
			}
		})
	}
}

func TestRanks(t *testing.T) {
	tests := []struct{ in, want []float64 }{
		{nil, []float64{}},
		{[]float64{3, 1, 2}, []float64{3, 1, 2}},
		{[]float64{1, 2, 2, 3}, []float64{1, 2.5, 2.5, 4}},
		{[]float64{5, 5, 5}, []float64{2, 2, 2}},
	}
	for _, tc := range tests {
		if got := ranks(tc.in); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("ranks(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

// TestCompareNeverPoolsIdentities: runs of one scenario that differ in load
// point or model are split into their own groups unless pooling is asked
// for, and --group-by takes several keys.
func TestCompareNeverPoolsIdentities(t *testing.T) {
	runs := load(t, "sweep-c4", "sweep-c12", "sweep-c24", "sweep-c12-qwen")
	keys := func(res Result) []string {
		var out []string
		for _, g := range res.Groups {
			out = append(out, g.Key)
		}
		return out
	}
	res := Compare(runset.NewSet(runs), Options{})
	want := []string{
		"sweep [model=llama-3.1-8b concurrency=4]",
		"sweep [model=llama-3.1-8b concurrency=12]",
		"sweep [model=llama-3.1-8b concurrency=24]",
		"sweep [model=qwen2.5-7b concurrency=12]",
	}
	if !reflect.DeepEqual(keys(res), want) {
		t.Errorf("default grouping %q, want %q", keys(res), want)
	}
	if res := Compare(runset.NewSet(runs), Options{Pool: true}); !reflect.DeepEqual(keys(res), []string{"sweep"}) || math.Abs(*res.Groups[0].MedianSS-0.34) > 1e-12 {
		t.Errorf("pooled: groups %q, median %v; want one group, median 0.34 of the four", keys(res), *res.Groups[0].MedianSS)
	}
	res = Compare(runset.NewSet(runs), Options{GroupBy: "run.model,run.concurrency"})
	want = []string{"llama-3.1-8b, 4", "llama-3.1-8b, 12", "llama-3.1-8b, 24", "qwen2.5-7b, 12"}
	if !reflect.DeepEqual(keys(res), want) {
		t.Errorf("--group-by run.model,run.concurrency: %q, want %q", keys(res), want)
	}
	// grouping by model alone still splits the load points apart
	res = Compare(runset.NewSet(runs), Options{GroupBy: "run.model"})
	want = []string{"llama-3.1-8b [concurrency=4]", "llama-3.1-8b [concurrency=12]", "llama-3.1-8b [concurrency=24]", "qwen2.5-7b"}
	if !reflect.DeepEqual(keys(res), want) {
		t.Errorf("--group-by run.model: %q, want %q", keys(res), want)
	}
}

// TestCompareWithoutScenario: runs without a scenario (bench --sweep-
// concurrency with no --scenario) group by their run identity by default:
// a re-run pools with its twin, a sweep's load points are one sweep with
// its knee, no --group-by needed.
func TestCompareWithoutScenario(t *testing.T) {
	runs := load(t, "sweep-c24", "sweep-c4", "sweep-c12", "sweep-c12-qwen")
	rerun := *runs[2]
	rerun.Name = "sweep-c12-rerun"
	runs = append(runs, &rerun)
	for _, r := range runs {
		r.Report.Scenario = ""
		delete(r.Raw, "scenario")
		if run, ok := r.Raw["run"].(map[string]any); ok {
			delete(run, "scenario")
		}
		if r.Report.Run != nil {
			id := *r.Report.Run
			id.Scenario = ""
			r.Report.Run = &id
		}
	}
	res := Compare(runset.NewSet(runs), Options{})
	var keys []string
	for _, g := range res.Groups {
		keys = append(keys, g.Key)
		if strings.HasPrefix(g.Key, "sweep-") {
			t.Errorf("group %q is a run of its own", g.Key)
		}
	}
	want := []string{"llama-3.1-8b [concurrency=24]", "llama-3.1-8b [concurrency=4]", "llama-3.1-8b [concurrency=12]", "qwen2.5-7b"}
	if !reflect.DeepEqual(keys, want) {
		t.Errorf("groups %q, want %q", keys, want)
	}
	for _, g := range res.Groups {
		if g.Key == "llama-3.1-8b [concurrency=12]" && !reflect.DeepEqual(g.Runs, []string{"sweep-c12", "sweep-c12-rerun"}) {
			t.Errorf("c12 group runs %v, want the run and its re-run pooled", g.Runs)
		}
	}
	if len(res.Sweeps) != 1 || res.Sweeps[0].Knee != "concurrency 12" || len(res.Sweeps[0].Points) != 3 {
		t.Fatalf("sweeps %+v, want one of 3 points with its knee at concurrency 12", res.Sweeps)
	}
}

// TestCompareKnee names the last load point meeting the SLOs and the
// diagnosis of the point after it.
func TestCompareKnee(t *testing.T) {
	res := Compare(runset.NewSet(load(t, "sweep-c24", "sweep-c4", "sweep-c12", "sweep-c12-qwen")), Options{})
	if len(res.Sweeps) != 1 {
		t.Fatalf("%d sweeps, want 1 (qwen has a single load point): %+v", len(res.Sweeps), res.Sweeps)
	}
	sw := res.Sweeps[0]
	var loads []string
	for _, p := range sw.Points {
		loads = append(loads, p.Load)
	}
	if !reflect.DeepEqual(loads, []string{"concurrency 4", "concurrency 12", "concurrency 24"}) {
		t.Errorf("points %v, want ascending load", loads)
	}
	if sw.Knee != "concurrency 12" || sw.After != "concurrency 24" || len(sw.AfterDiagnosis) != 1 || !strings.HasPrefix(sw.AfterDiagnosis[0], "queueing: requests queue") {
		t.Errorf("knee %q after %q diagnosis %q", sw.Knee, sw.After, sw.AfterDiagnosis)
	}
	if p := sw.Points[2]; p.MeetsSLO || !strings.Contains(p.Why, "TTFT p95 1400 ms > SLO 500 ms") || !strings.Contains(p.Why, "TPOT p95 45 ms > SLO 35 ms") {
		t.Errorf("c24 %+v, want it to miss both SLOs with the numbers", p)
	}
	var buf bytes.Buffer
	if err := WriteText(&buf, res); err != nil {
		t.Fatal(err)
	}
	golden.Compare(t, "sweep.golden", buf.Bytes())
}
