package runset

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/joulemark/joulemark/internal/testkit/golden"
	"github.com/joulemark/joulemark/report/outputsanity"
)

// fixtureRuns loads testdata/runs/<name>/report.json for each name.
func fixtureRuns(t *testing.T, names ...string) []*Run {
	t.Helper()
	var paths []string
	for _, n := range names {
		paths = append(paths, filepath.Join("testdata", "runs", n, "report.json"))
	}
	runs, err := loadReports(paths, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return runs
}

var allRuns = []string{"vllm-tp1", "vllm-tp2", "sglang-tp1", "sglang-tp2", "tgi-tp1"}

func TestLoadReport(t *testing.T) {
	runs := fixtureRuns(t, "vllm-tp2", "sglang-tp1")
	if s := runs[0].Sanity; s == nil || outputsanity.Format(s) != "2/2/4 of 40" {
		t.Errorf("vllm-tp2 sanity = %s, want 2/2/4 of 40 (2 empty, 3 identical = 2 repeats, 4 short)", outputsanity.Format(s))
	}
	if runs[1].Sanity != nil {
		t.Errorf("sglang-tp1 has no archive, got sanity %s", outputsanity.Format(runs[1].Sanity))
	}
	if v, ok := runs[0].Lookup("measurement.energy_source"); !ok || v != "counter" {
		t.Errorf("Lookup = %q %v", v, ok)
	}
	if _, ok := runs[0].Lookup("steady_state.nope"); ok {
		t.Error("Lookup of a missing key succeeded")
	}

	// The archive is found under --runs-dir when it is not beside the report.
	dir := t.TempDir()
	data, _ := os.ReadFile(filepath.Join("testdata", "runs", "vllm-tp2", "report.json"))
	p := filepath.Join(dir, "report.json")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := LoadReport(p, LoadOptions{RunsDir: filepath.Join("testdata", "runs")})
	if err != nil || r.Sanity == nil || r.Sanity.Empty != 2 {
		t.Errorf("runs-dir lookup: %v, %+v", err, r)
	}

	// A report inside its run's archive (runs/<run_id>/report/report.json,
	// the demo's layout) finds the archive above it, without --runs-dir;
	// only when that archive's manifest names the run.
	for _, tc := range []struct {
		manifestID string
		found      bool
	}{{"vllm-tp2", true}, {"someone-else", false}} {
		run := filepath.Join(t.TempDir(), "vllm-tp2")
		if err := os.MkdirAll(filepath.Join(run, "report"), 0o755); err != nil {
			t.Fatal(err)
		}
		reqs, _ := os.ReadFile(filepath.Join("testdata", "runs", "vllm-tp2", "requests.jsonl"))
		manifest := `{"run_id":"` + tc.manifestID + `","load":{"mode":"closed","concurrency":8}}`
		for name, body := range map[string][]byte{"report/report.json": data, "requests.jsonl": reqs, "manifest.json": []byte(manifest)} {
			if err := os.WriteFile(filepath.Join(run, name), body, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		r, err := LoadReport(filepath.Join(run, "report", "report.json"), LoadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := r.Sanity != nil && r.Load.String() == "concurrency 8"; got != tc.found {
			t.Errorf("manifest of %s: sanity %v, load %s; want found=%v", tc.manifestID, r.Sanity, r.Load, tc.found)
		}
	}

	// The configured load comes from manifest.json of the same run only.
	for _, tc := range []struct{ manifest, want string }{
		{`{"run_id":"vllm-tp2","load":{"mode":"poisson","target_rate":2.5}}`, "rate 2.5 req/s (poisson)"},
		{`{"run_id":"someone-else","load":{"mode":"closed","concurrency":8}}`, "-"},
	} {
		if err := os.WriteFile(filepath.Join(dir, "manifest.json"), []byte(tc.manifest), 0o644); err != nil {
			t.Fatal(err)
		}
		r, err := LoadReport(p, LoadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := r.Load.String(); got != tc.want {
			t.Errorf("manifest %s: load %q, want %q", tc.manifest, got, tc.want)
		}
	}
	os.WriteFile(filepath.Join(dir, "manifest.json"), []byte("{\n\"load\": [\n"), 0o644)
	if _, err := LoadReport(p, LoadOptions{}); err == nil || !strings.Contains(err.Error(), "manifest.json") {
		t.Errorf("malformed manifest: %v", err)
	}
	os.Remove(filepath.Join(dir, "manifest.json"))

	// Errors say what and where.
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte("{\n  \"run_id\": \"x\",\n  \"valid\": \"yes\"\n}\n"), 0o644)
	if _, err := LoadReport(bad, LoadOptions{}); err == nil || !strings.Contains(err.Error(), bad) || !strings.Contains(err.Error(), "line 3") {
		t.Errorf("bad report: %v, want an error naming the file and line 3", err)
	}
	same := filepath.Join("testdata", "runs", "vllm-tp1", "report.json")
	if _, err := loadReports([]string{same, same}, LoadOptions{}); err == nil || !strings.Contains(err.Error(), "both have run_id") {
		t.Errorf("duplicate run_id: %v", err)
	}
}

func TestDominates(t *testing.T) {
	mk := func(name string, ss, tput *float64) *Run {
		r := &Run{Name: name}
		r.Report.SteadyState.Reached = ss != nil
		r.Report.SteadyState.JoulesPerToken = ss
		r.Report.ThroughputTokensPerSecond = tput
		return r
	}
	metrics := []Metric{SteadyStateJPT, Throughput}
	tests := []struct {
		name string
		a, b *Run
		want bool
	}{
		{"better in both", mk("a", f64(1), f64(10)), mk("b", f64(2), f64(5)), true},
		{"better in one, equal in other", mk("a", f64(1), f64(5)), mk("b", f64(2), f64(5)), true},
		{"equal in both", mk("a", f64(1), f64(5)), mk("b", f64(1), f64(5)), false},
		{"trade-off", mk("a", f64(1), f64(4)), mk("b", f64(2), f64(5)), false},
		{"missing in b narrows to throughput", mk("a", f64(1), f64(10)), mk("b", nil, f64(5)), true},
		{"missing in a narrows too", mk("a", nil, f64(10)), mk("b", f64(0.5), f64(5)), true},
		{"nothing in common", mk("a", f64(1), nil), mk("b", nil, f64(5)), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := dominates(tc.a, tc.b, metrics); got != tc.want {
				t.Errorf("dominates = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestParetoCycle(t *testing.T) {
	mk := func(name string, ss, tput, ttft *float64) *Run {
		r := &Run{Name: name}
		r.Report.Valid = true
		r.Report.SteadyState.Reached = ss != nil
		r.Report.SteadyState.JoulesPerToken = ss
		r.Report.ThroughputTokensPerSecond = tput
		r.Report.Latency.TTFTSeconds.P95 = ttft
		return r
	}
	// a beats b on J/token, b beats c on throughput, c beats a on TTFT; d is
	// beaten by all three and beats none.
	runs := []*Run{
		mk("a", f64(1), nil, f64(5)),
		mk("b", f64(2), f64(10), nil),
		mk("c", nil, f64(5), f64(1)),
		mk("d", nil, f64(4), f64(6)),
	}
	classes := Pareto(runs, ParetoMetrics)
	want := []struct {
		rank  int
		cycle bool
		by    []string
	}{{1, true, []string{"c"}}, {1, true, []string{"a"}}, {1, true, []string{"b"}}, {2, false, []string{"a", "b", "c"}}}
	for i, c := range classes {
		if c.Rank != want[i].rank || c.Cycle != want[i].cycle || !reflect.DeepEqual(c.DominatedBy, want[i].by) {
			t.Errorf("%s: rank %d cycle %v by %v, want %+v", c.Run.Name, c.Rank, c.Cycle, c.DominatedBy, want[i])
		}
	}
}

func TestPareto(t *testing.T) {
	runs := fixtureRuns(t, allRuns...)
	classes := Pareto(runs, ParetoMetrics)
	want := map[string]struct {
		rank int
		by   []string
	}{
		"vllm-tp1":   {1, nil},
		"vllm-tp2":   {1, nil},
		"sglang-tp1": {2, []string{"vllm-tp1"}},
		"sglang-tp2": {1, nil}, // best steady-state J/token; TPOT and goodput missing narrow its comparisons
		"tgi-tp1":    {0, nil}, // invalid: excluded despite the best figures
	}
	for _, c := range classes {
		w := want[c.Run.Name]
		if c.Rank != w.rank || !reflect.DeepEqual(c.DominatedBy, w.by) {
			t.Errorf("%s: rank %d dominated by %v, want rank %d by %v", c.Run.Name, c.Rank, c.DominatedBy, w.rank, w.by)
		}
	}
	if classes[4].Excluded != "invalid: release_not_closed" {
		t.Errorf("tgi-tp1 excluded = %q", classes[4].Excluded)
	}
	var buf bytes.Buffer
	if err := WriteParetoTable(&buf, classes, ParetoMetrics); err != nil {
		t.Fatal(err)
	}
	golden.Compare(t, "pareto.golden", buf.Bytes())
}

func TestRecommend(t *testing.T) {
	runs := fixtureRuns(t, allRuns...)
	tests := []struct {
		name     string
		cons     []Constraint
		maxBad   float64
		prefer   Metric
		best     string
		excluded map[string]string // substrings of the reasons
	}{
		{
			name: "no constraint: front tiebreak on steady-state J/token", maxBad: -1, prefer: SteadyStateJPT, best: "sglang-tp2",
			excluded: map[string]string{"tgi-tp1": "invalid: release_not_closed", "sglang-tp1": "dominated by vllm-tp1"},
		},
		{
			name: "prefer full-lifecycle J/token", maxBad: -1, prefer: LifecycleJPT, best: "vllm-tp2",
		},
		{
			name:   "TPOT constraint drops the run missing TPOT",
			cons:   []Constraint{{Metric: TPOTP95, Bound: 0.031, Upper: true, Flag: "--max-tpot-p95"}},
			maxBad: -1, prefer: SteadyStateJPT, best: "vllm-tp1",
			excluded: map[string]string{
				"sglang-tp2": "latency.tpot_seconds.p95 missing (--max-tpot-p95)",
				"sglang-tp1": "latency.tpot_seconds.p95 32 ms > 31 ms (--max-tpot-p95)",
			},
		},
		{
			name:   "goodput floor and TTFT ceiling",
			cons:   []Constraint{{Metric: Goodput, Bound: 0.98, Flag: "--min-goodput"}, {Metric: TTFTP95, Bound: 0.15, Upper: true, Flag: "--max-ttft-p95"}},
			maxBad: -1, prefer: SteadyStateJPT, best: "vllm-tp2",
			excluded: map[string]string{"vllm-tp1": "goodput.ratio 0.97 < 0.98 (--min-goodput); latency.ttft_seconds.p95 200 ms > 150 ms (--max-ttft-p95)"},
		},
		{
			name:   "output sanity gate",
			maxBad: 0.05, prefer: SteadyStateJPT, best: "vllm-tp1",
			excluded: map[string]string{
				"vllm-tp2":   "bad outputs 0.2 > 0.05 (8 empty/repeated/short of 40",
				"sglang-tp2": "output sanity incomplete",
				"sglang-tp1": "no requests.jsonl",
			},
		},
		{
			name:   "nothing survives",
			cons:   []Constraint{{Metric: SteadyStateJPT, Bound: 0.1, Upper: true, Flag: "--max-joules-per-token"}},
			maxBad: -1, prefer: SteadyStateJPT, best: "",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := Recommend(runs, tc.cons, tc.maxBad, ParetoMetrics, tc.prefer)
			got := ""
			if rec.Best != nil {
				got = rec.Best.Name
			}
			if got != tc.best {
				t.Fatalf("best = %q, want %q (excluded %v)", got, tc.best, rec.Excluded)
			}
			for name, want := range tc.excluded {
				if !strings.Contains(rec.Excluded[name], want) {
					t.Errorf("%s excluded for %q, want %q", name, rec.Excluded[name], want)
				}
			}
			// Every run is either on the front or excluded with a reason.
			if n := len(rec.Front) + len(rec.Excluded); n != len(runs) {
				t.Errorf("front %d + excluded %d != %d runs", len(rec.Front), len(rec.Excluded), len(runs))
			}
		})
	}
	// The choice does not depend on input order.
	rev := []*Run{runs[4], runs[3], runs[2], runs[1], runs[0]}
	if a, b := Recommend(runs, nil, -1, ParetoMetrics, LifecycleJPT), Recommend(rev, nil, -1, ParetoMetrics, LifecycleJPT); a.Best != b.Best {
		t.Errorf("order changed the choice: %s vs %s", a.Best.Name, b.Best.Name)
	}

	var buf bytes.Buffer
	rec := Recommend(runs, []Constraint{{Metric: TPOTP95, Bound: 0.031, Upper: true, Flag: "--max-tpot-p95"}}, -1, ParetoMetrics, SteadyStateJPT)
	if err := WriteRecommendation(&buf, rec, ParetoMetrics); err != nil {
		t.Fatal(err)
	}
	golden.Compare(t, "recommend.golden", buf.Bytes())
	none := Recommend(runs, []Constraint{{Metric: SteadyStateJPT, Bound: 0.1, Upper: true, Flag: "--max-joules-per-token"}}, -1, ParetoMetrics, SteadyStateJPT)
	if err := WriteRecommendation(&bytes.Buffer{}, none, ParetoMetrics); err != ErrNoSurvivor {
		t.Errorf("no survivor: err %v", err)
	}
}

func loadDiff(t *testing.T, name string) *Run {
	t.Helper()
	r, err := LoadReport(filepath.Join("testdata", "diff", name), LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestDiff(t *testing.T) {
	before := loadDiff(t, "before.json")
	tests := []struct {
		after     string
		threshold float64
		regressed []string
		validity  bool
	}{
		{"after-ok.json", 5, nil, false},
		// ss 0.30→0.33 (+10%), throughput 1500→1380 (−8%), goodput vanished, error rate 1%→2%.
		{"after-bad.json", 5, []string{"steady_state.joules_per_token", "throughput_tokens_per_second", "goodput.ratio", "requests.error_rate"}, false},
		{"after-bad.json", 9, []string{"steady_state.joules_per_token", "goodput.ratio", "requests.error_rate"}, false},
		{"after-invalid.json", 5, nil, true},
	}
	for _, tc := range tests {
		t.Run(tc.after, func(t *testing.T) {
			d := Diff(before, loadDiff(t, tc.after), DiffMetrics, tc.threshold)
			var got []string
			for _, c := range d.Changes {
				if c.Regressed {
					got = append(got, c.Metric.Key)
				}
			}
			if !reflect.DeepEqual(got, tc.regressed) || d.ValidityRegressed != tc.validity {
				t.Errorf("regressed %v validity %v, want %v %v", got, d.ValidityRegressed, tc.regressed, tc.validity)
			}
			if want := len(tc.regressed) + map[bool]int{true: 1}[tc.validity]; d.Regressions() != want {
				t.Errorf("Regressions() = %d, want %d", d.Regressions(), want)
			}
		})
	}
	// Direction-aware percentages.
	d := Diff(before, loadDiff(t, "after-ok.json"), []Metric{SteadyStateJPT, Throughput, TTFTP95}, 5)
	for i, want := range []float64{100 * 0.01 / 0.30, 100 * 20.0 / 1500, -10} {
		if math.Abs(d.Changes[i].Worse-want) > 1e-9 {
			t.Errorf("%s worse = %v, want %v", d.Changes[i].Metric.Key, d.Changes[i].Worse, want)
		}
	}
	// The output sanity gate reads AFTER's archive.
	for _, tc := range []struct {
		run    string
		maxBad float64
		want   string
	}{
		{"vllm-tp1", 0, ""},
		{"vllm-tp2", 0.25, ""},
		{"vllm-tp2", 0.1, "bad outputs 0.2 > 0.1"},
		{"sglang-tp1", 0.1, "no requests.jsonl"},
	} {
		d := Diff(before, fixtureRuns(t, tc.run)[0], DiffMetrics, 5)
		n := d.Regressions()
		d.CheckSanity(tc.maxBad)
		if !strings.Contains(d.SanityFailed, tc.want) || (tc.want == "") != (d.SanityFailed == "") {
			t.Errorf("%s at %v: sanity %q, want %q", tc.run, tc.maxBad, d.SanityFailed, tc.want)
		}
		if tc.want != "" && d.Regressions() != n+1 {
			t.Errorf("%s: a failed sanity check does not count as a regression", tc.run)
		}
	}

	var buf bytes.Buffer
	if err := WriteDiff(&buf, Diff(before, loadDiff(t, "after-bad.json"), DiffMetrics, 5)); err != nil {
		t.Fatal(err)
	}
	golden.Compare(t, "diff.golden", buf.Bytes())
}

func TestPlan(t *testing.T) {
	var paths []string
	for _, c := range []int{64, 1, 16, 4} { // any order
		paths = append(paths, filepath.Join("testdata", "sweep", "sweep-c"+itoa(c), "report.json"))
	}
	runs, err := loadReports(paths, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	slos := []Constraint{
		{Metric: TTFTP95, Bound: 0.5, Upper: true, Flag: "--slo.ttft-p95"},
		{Metric: TPOTP95, Bound: 0.035, Upper: true, Flag: "--slo.tpot-p95"},
		{Metric: Goodput, Bound: 0.95, Flag: "--min-goodput"},
	}
	p, err := MakePlan(runs, PlanOptions{TargetPeakRateRPS: 100, SLOs: slos, RestartsPerDay: 1})
	if err != nil {
		t.Fatal(err)
	}
	// sweep-c16: concurrency 16 at W = 3.5 s: 990 successful requests at
	// 16/3.5 req/s.
	if p.AdmissionLimit == nil || p.AdmissionLimit.RunID != "sweep-c16" || p.AdmissionLimit.ConfiguredLoad != "concurrency 16" {
		t.Fatalf("admission limit = %+v, want sweep-c16 at concurrency 16", p.AdmissionLimit)
	}
	near := func(name string, got, want float64) {
		if math.Abs(got-want) > 1e-6*math.Abs(want) {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	near("rate", *p.AdmissionLimit.RateRPS, 16/3.5)
	near("in flight", *p.AdmissionLimit.InFlight, 16)
	near("in flight at peak", p.InFlightAtPeak, 350)
	if p.Replicas != 22 { // ⌈100 / (16/3.5)⌉ = ⌈21.875⌉
		t.Errorf("replicas = %d, want 22", p.Replicas)
	}
	// 22 × (20000 + 3000) J + 100 × 86400 requests × (45 − 16·0.5) J.
	near("energy per day", *p.EnergyPerDayJoules, 22*23000+100*86400*37)
	if p.Points[1].ConfiguredLoad != "-" {
		t.Errorf("sweep-c4 has no manifest, configured load %q", p.Points[1].ConfiguredLoad)
	}
	if len(p.Warnings) != 0 {
		t.Errorf("warnings: %v", p.Warnings)
	}
	var buf bytes.Buffer
	if err := WritePlan(&buf, p); err != nil {
		t.Fatal(err)
	}
	golden.Compare(t, "plan.golden", buf.Bytes())
	buf.Reset()
	if err := WritePlanJSON(&buf, p); err != nil {
		t.Fatal(err)
	}
	golden.Compare(t, "plan.json.golden", buf.Bytes())

	if _, err := MakePlan(runs, PlanOptions{TargetPeakRateRPS: 100, SLOs: []Constraint{{Metric: TTFTP95, Bound: 0.01, Upper: true, Flag: "--slo.ttft-p95"}}}); err == nil {
		t.Error("no point meets the SLO: want an error")
	}
	if _, err := MakePlan(runs, PlanOptions{TargetPeakRateRPS: 0}); err == nil {
		t.Error("zero target rate: want an error")
	}
}

func itoa(i int) string { return strings.TrimSpace(FormatValue(float64(i), true)) }

func TestWriteFileNew(t *testing.T) {
	p := filepath.Join(t.TempDir(), "plan.json")
	if err := WriteFileNew(p, []byte("one")); err != nil {
		t.Fatal(err)
	}
	if err := WriteFileNew(p, []byte("two")); err == nil || !strings.Contains(err.Error(), "refusing to overwrite") {
		t.Errorf("second write: %v", err)
	}
	if b, _ := os.ReadFile(p); string(b) != "one" {
		t.Errorf("file = %q, the earlier result was overwritten", b)
	}
	entries, _ := os.ReadDir(filepath.Dir(p))
	if len(entries) != 1 {
		t.Errorf("temporary files left: %v", entries)
	}
}

// A manifest's load reads as the report identity's does (contract.RunIdentity.Load):
// an open-loop rate wins over a concurrency cap.
func TestLoadPointString(t *testing.T) {
	for _, tc := range []struct {
		l    *LoadPoint
		want string
	}{
		{nil, "-"}, {&LoadPoint{}, "-"}, {&LoadPoint{Mode: "trace"}, "trace"},
		{&LoadPoint{Mode: "closed", Concurrency: 16}, "concurrency 16"},
		{&LoadPoint{Mode: "poisson", TargetRate: 2.5}, "rate 2.5 req/s (poisson)"},
		{&LoadPoint{Mode: "poisson", Concurrency: 64, TargetRate: 5}, "rate 5 req/s (poisson)"},
	} {
		if got := tc.l.String(); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.l, got, tc.want)
		}
	}
}

// Diff compares after to before over metrics, one run a side.
func Diff(before, after *Run, metrics []Metric, thresholdPct float64) DiffResult {
	return DiffRuns(NewSet([]*Run{before}), NewSet([]*Run{after}), metrics, thresholdPct)
}
