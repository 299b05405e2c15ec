package runset

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/joulemark/joulemark/internal/contract"
	"github.com/joulemark/joulemark/report"
	"github.com/joulemark/joulemark/report/outputsanity"
)

// rep is a crafted report of one repetition: steady-state J/token ss (0:
// steady state not reached), formal output tokens, valid or not.
func rep(id, group string, idx int, ss float64, tokens int64, valid bool) *Run {
	r := &Run{Name: id, Report: report.Report{RunID: id, Valid: valid}}
	r.Report.Run = &report.RunIdentity{RunIdentity: contract.RunIdentity{RunID: id, Model: "m", Engine: "sim", GPUs: 1, GPUName: "Simulated GPU",
		LoadMode: "closed", Concurrency: 8, DatasetSHA256: "ab", Mode: contract.ModeLifecycle,
		RepetitionGroup: group, Repetition: idx, Repetitions: 3}}
	r.Report.Tokens.FormalOutput = tokens
	if ss > 0 {
		r.Report.SteadyState.Reached, r.Report.SteadyState.JoulesPerToken = true, f64(ss)
		r.Report.ThroughputTokensPerSecond = f64(1000 / ss)
	}
	if !valid {
		r.Report.Flags = []report.Flag{{Code: "release_not_closed", Excluding: true}}
	}
	return r
}

// The repetitions of one configuration pool into one median and range;
// an invalid one is counted, never pooled; a repetition off the median by
// more than ±20% makes the group disagree; two identities never pool, even
// under one group id.
func TestRepetitionPools(t *testing.T) {
	otherModel := rep("g2-rep2", "g2", 2, 0.41, 1000, true)
	otherModel.Report.Run.Model = "m2"
	tests := []struct {
		name       string
		runs       []*Run
		pools      []string // pool names
		median     float64  // of the first pool's steady-state J/token
		lo, hi     float64
		valid      int
		agree      bool
		verdict    string // contained in the first pool's verdict
		relRange   float64
		invalid    int
		coverage   float64
		paretoRuns int // Set.Pooled's length
	}{
		{name: "agreeing group",
			runs:  []*Run{rep("g-rep1", "g", 1, 0.40, 1000, true), rep("g-rep2", "g", 2, 0.42, 1010, true), rep("g-rep3", "g", 3, 0.44, 990, true)},
			pools: []string{"g"}, median: 0.42, lo: 0.40, hi: 0.44, valid: 3, agree: true, verdict: "agree",
			relRange: 0.04 / 0.42, coverage: 0.75, paretoRuns: 1},
		{name: "one outlier beyond ±20%",
			runs:  []*Run{rep("g-rep1", "g", 1, 0.40, 1000, true), rep("g-rep2", "g", 2, 0.41, 1000, true), rep("g-rep3", "g", 3, 0.55, 1000, true)},
			pools: []string{"g"}, median: 0.41, lo: 0.40, hi: 0.55, valid: 3, agree: false, verdict: "disagree: steady-state J/token beyond ±20% of the median: g-rep3 +34%",
			relRange: 0.15 / 0.41, coverage: 0.75, paretoRuns: 1},
		{name: "one invalid repetition, counted not pooled",
			runs:  []*Run{rep("g-rep1", "g", 1, 0.40, 1000, true), rep("g-rep2", "g", 2, 2.0, 1000, false), rep("g-rep3", "g", 3, 0.42, 1000, true)},
			pools: []string{"g"}, median: 0.41, lo: 0.40, hi: 0.42, valid: 2, agree: true, verdict: "agree",
			relRange: 0.02 / 0.41, invalid: 1, coverage: 0.5, paretoRuns: 1},
		{name: "two identities under one group id never pool",
			runs:  []*Run{rep("g2-rep1", "g2", 1, 0.40, 1000, true), otherModel, rep("g2-rep3", "g2", 3, 0.42, 1000, true)},
			pools: []string{"g2 [model=m]", "g2 [model=m2]"}, median: 0.41, lo: 0.40, hi: 0.42, valid: 2, agree: true, verdict: "agree",
			relRange: 0.02 / 0.41, coverage: 0.5, paretoRuns: 2},
		{name: "two groups of one configuration never pool",
			runs:  []*Run{rep("a-rep1", "a", 1, 0.40, 1000, true), rep("b-rep1", "b", 1, 0.80, 1000, true), rep("a-rep2", "a", 2, 0.42, 1000, true)},
			pools: []string{"a", "b"}, median: 0.41, lo: 0.40, hi: 0.42, valid: 2, agree: true, verdict: "agree",
			relRange: 0.02 / 0.41, coverage: 0.5, paretoRuns: 2},
		{name: "one valid repetition cannot tell",
			runs:  []*Run{rep("g-rep1", "g", 1, 0.40, 1000, true), rep("g-rep2", "g", 2, 0.40, 1000, false)},
			pools: []string{"g"}, median: 0.40, lo: 0.40, hi: 0.40, valid: 1, agree: false, verdict: "cannot tell: 1 valid repetition(s)",
			invalid: 1, paretoRuns: 1},
		{name: "steady state missing in a valid repetition",
			runs:  []*Run{rep("g-rep1", "g", 1, 0.40, 1000, true), rep("g-rep2", "g", 2, 0, 1000, true)},
			pools: []string{"g"}, median: 0.40, lo: 0.40, hi: 0.40, valid: 2, agree: false, verdict: "cannot tell: no steady-state J/token in g-rep2",
			paretoRuns: 1},
		{name: "formal output tokens beyond the method's 20%",
			runs:  []*Run{rep("g-rep1", "g", 1, 0.40, 1000, true), rep("g-rep2", "g", 2, 0.40, 700, true)},
			pools: []string{"g"}, median: 0.40, lo: 0.40, hi: 0.40, valid: 2, agree: false, verdict: "disagree: formal output tokens spread 30% > 20%",
			coverage: 0.5, paretoRuns: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pools := poolRepetitions(tc.runs)
			var names []string
			for _, p := range pools {
				names = append(names, p.Name)
			}
			if !slices.Equal(names, tc.pools) {
				t.Fatalf("pools %q, want %q", names, tc.pools)
			}
			s := pools[0].Summary(DiffMetrics)
			ss := s.Metrics[SteadyStateJPT.Key]
			if ss == nil || math.Abs(ss.Median-tc.median) > 1e-12 || ss.Min != tc.lo || ss.Max != tc.hi {
				t.Errorf("steady state %+v, want median %v in [%v, %v]", ss, tc.median, tc.lo, tc.hi)
			}
			a := s.Agreement
			if a.Valid != tc.valid || a.Agree != tc.agree || !strings.Contains(a.Verdict, tc.verdict) || len(a.Invalid) != tc.invalid {
				t.Errorf("agreement %+v, want valid %d agree %v verdict %q invalid %d", a, tc.valid, tc.agree, tc.verdict, tc.invalid)
			}
			if tc.relRange > 0 && (a.RelativeRange == nil || math.Abs(*a.RelativeRange-tc.relRange) > 1e-12) {
				t.Errorf("relative range %v, want %v", a.RelativeRange, tc.relRange)
			}
			if math.Abs(s.IntervalCoverage-tc.coverage) > 1e-12 && tc.coverage > 0 {
				t.Errorf("coverage %v, want %v", s.IntervalCoverage, tc.coverage)
			}
			pooled := NewSet(tc.runs).Pooled()
			if len(pooled) != tc.paretoRuns {
				t.Fatalf("Pooled gave %d runs, want %d", len(pooled), tc.paretoRuns)
			}
			if v, ok := SteadyStateJPT.Of(pooled[0]); !ok || math.Abs(v-tc.median) > 1e-12 {
				t.Errorf("pooled run's steady state %v %v, want the median %v", v, ok, tc.median)
			}
		})
	}
}

// Pareto ranks a pool as one point on its medians; a pool without a valid
// repetition is excluded with the count; a plain run stays as it is.
func TestParetoPooled(t *testing.T) {
	runs := []*Run{
		rep("a-rep1", "a", 1, 0.40, 1000, true), rep("a-rep2", "a", 2, 0.60, 1000, true), rep("a-rep3", "a", 3, 0.44, 1000, true),
		rep("b-rep1", "b", 1, 0.50, 1000, false), rep("b-rep2", "b", 2, 0.50, 1000, false),
		rep("plain", "", 0, 0.45, 1000, true),
	}
	pooled := NewSet(runs).Pooled()
	classes := Pareto(pooled, []Metric{SteadyStateJPT, Throughput})
	var got []string
	for _, c := range classes {
		got = append(got, c.Run.Name+":"+classLabel(c))
	}
	// a's median 0.44 beats plain's 0.45 (its best repetition alone would too,
	// its worst would not).
	if want := []string{"a:front", "b:excluded", "plain:rank 2"}; !slices.Equal(got, want) {
		t.Errorf("classes %q, want %q", got, want)
	}
	if classes[1].Excluded != "no valid repetition of 2" {
		t.Errorf("b excluded %q", classes[1].Excluded)
	}
	if n := classNote(classes[0]); !strings.Contains(n, "of 3 valid of 3 repetitions") || !strings.Contains(n, "disagree") {
		t.Errorf("note %q", n)
	}
	if c := FormatMetric(SteadyStateJPT, pooled[0]); c != "0.44 (0.4–0.6)" {
		t.Errorf("cell %q", c)
	}
}

// reps is a group's repetitions with steady-state J/token ss (< 0: that
// repetition is invalid, at |ss|).
func reps(group string, ss ...float64) []*Run {
	var out []*Run
	for i, v := range ss {
		r := rep(fmt.Sprintf("%s-rep%d", group, i+1), group, i+1, math.Abs(v), 1000, v > 0)
		r.Report.Run.Repetitions = len(ss)
		out = append(out, r)
	}
	return out
}

// withSanity gives each run n successful requests, bad[i] of them empty.
func withSanity(runs []*Run, n int, bad ...int) []*Run {
	for i, r := range runs {
		zero := 0
		r.Sanity = &report.OutputCounts{Requests: n, Empty: bad[i], Repeated: &zero, Short: &zero}
	}
	return runs
}

// recommend judges a repetition group as one candidate on its medians:
// every case picks another run than it would with each repetition a
// candidate of its own (the medians switched off).
func TestRecommendPooled(t *testing.T) {
	plain := func(ss float64) *Run { return rep("plain", "", 0, ss, 1000, true) }
	maxSS := []Constraint{{Metric: SteadyStateJPT, Bound: 0.48, Upper: true, Flag: "--max-joules-per-token"}}
	tests := []struct {
		name     string
		runs     []*Run
		cons     []Constraint
		maxBad   float64
		best     string
		excluded map[string]string // run → substring of its reason
		warning  string            // substring of the warnings
		note     string            // substring of the text output
	}{
		{name: "median, not the best repetition", runs: append(reps("g", 0.42, 0.50, 0.52), plain(0.45)), maxBad: -1,
			best: "plain", excluded: map[string]string{"g": "dominated by plain"}, note: "median [min-max] of 3 valid of 3 repetitions; agree"},
		{name: "constraint on the median", runs: append(reps("g", 0.42, 0.50, 0.52), plain(0.60)), cons: maxSS, maxBad: -1,
			best: "", excluded: map[string]string{"g": "steady_state.joules_per_token 0.5 > 0.48", "plain": "0.6 > 0.48"}},
		{name: "invalid repetition not pooled", runs: append(reps("g", 0.42, -0.30, 0.44), plain(0.425)), maxBad: -1,
			best: "plain", excluded: map[string]string{"g": "dominated by plain"},
			note: "2 valid of 3 repetitions; not pooled: g-rep2: invalid: release_not_closed"},
		{name: "no valid repetition", runs: append(reps("g", -0.30, -0.31), plain(0.45)), maxBad: -1,
			best: "plain", excluded: map[string]string{"g": "no valid repetition of 2"}},
		{name: "disagreeing repetitions stay eligible, with a warning", runs: append(reps("g", 0.40, 0.41, 0.55), plain(0.45)), maxBad: -1,
			best: "g", excluded: map[string]string{"plain": "dominated by g"},
			warning: "g: its repetitions disagree: steady-state J/token beyond ±20% of the median: g-rep3 +34%"},
		{name: "output sanity of every valid repetition", runs: append(withSanity(reps("g", 0.40, 0.41, 0.42), 40, 0, 8, 0), withSanity([]*Run{plain(0.45)}, 40, 0)...), maxBad: 0.05,
			best: "plain", excluded: map[string]string{"g": "g-rep2: bad outputs 0.2 > 0.05"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := Recommend(NewSet(tc.runs).Pooled(), tc.cons, tc.maxBad, ParetoMetrics, SteadyStateJPT)
			got := ""
			if rec.Best != nil {
				got = rec.Best.Name
			}
			if got != tc.best {
				t.Errorf("best %q, want %q (excluded %v)", got, tc.best, rec.Excluded)
			}
			for name, want := range tc.excluded {
				if !strings.Contains(rec.Excluded[name], want) {
					t.Errorf("%s excluded for %q, want %q", name, rec.Excluded[name], want)
				}
			}
			if w := strings.Join(rec.Warnings, "\n"); (tc.warning == "") != (w == "") || !strings.Contains(w, tc.warning) {
				t.Errorf("warnings %q, want %q", w, tc.warning)
			}
			var out strings.Builder
			_ = WriteRecommendation(&out, rec, ParetoMetrics)
			if !strings.Contains(out.String(), tc.note) || strings.Contains(out.String(), "g-rep1 ") {
				t.Errorf("text lacks %q or lists a repetition as a candidate:\n%s", tc.note, out.String())
			}
		})
	}
}

// diff pools a side that is a repetition group: its figures are the
// medians over the valid repetitions, the header names the group with
// its pool note, and disagreeing repetitions are warned about; every case
// reads differently with the invalid repetitions pooled and no pool named.
func TestDiffPooled(t *testing.T) {
	before := reps("b", 0.300, 0.302, 0.298, 0.301)
	tests := []struct {
		name      string
		after     []*Run
		median    float64 // AFTER's steady-state J/token
		n         int     // AFTER's values
		regressed bool
		validity  bool
		header    string // in the text's "after:" line
		warning   string
	}{
		{name: "agreeing group", after: reps("a", 0.300, 0.301, 0.299, 0.302), median: 0.3005, n: 4,
			header: "after:  a (median [min-max] of 4 valid of 4 repetitions; agree)"},
		{name: "an invalid repetition is not pooled", after: reps("a", 0.300, -0.60, -0.61, 0.301), median: 0.3005, n: 2, validity: true,
			header: "after:  a (median [min-max] of 2 valid of 4 repetitions; not pooled: a-rep2: invalid: release_not_closed, a-rep3: invalid: release_not_closed"},
		{name: "no valid repetition", after: reps("a", -0.40, -0.41), median: 0.405, n: 2, regressed: true, validity: true,
			header: "after:  a (no valid repetition of 2: its figures are the invalid ones' medians"},
		{name: "disagreeing repetitions", after: reps("a", 0.300, 0.301, 0.40), median: 0.301, n: 3,
			header: "after:  a (median [min-max] of 3 valid of 3 repetitions; disagree", warning: "AFTER a: its repetitions disagree: steady-state J/token beyond ±20% of the median: a-rep3 +33%"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := DiffRuns(NewSet(before), NewSet(tc.after), []Metric{SteadyStateJPT}, 5)
			c := d.Changes[0]
			if math.Abs(c.After-tc.median) > 1e-12 || c.N2 != tc.n || c.Regressed != tc.regressed || d.ValidityRegressed != tc.validity {
				t.Errorf("after %v over %d (regressed %v, validity %v); want %v over %d (%v, %v)", c.After, c.N2, c.Regressed, d.ValidityRegressed, tc.median, tc.n, tc.regressed, tc.validity)
			}
			var out strings.Builder
			if err := WriteDiff(&out, d); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(out.String(), "before: b (median [min-max] of 4 valid of 4 repetitions; agree)") || !strings.Contains(out.String(), tc.header) {
				t.Errorf("header lacks %q:\n%s", tc.header, out.String())
			}
			if w := strings.Join(d.Warnings, "\n"); (tc.warning == "") != (w == "") || !strings.Contains(w, tc.warning) {
				t.Errorf("warnings %q, want %q", w, tc.warning)
			}
			if b, a := d.Names(); b != "b" || a != "a" {
				t.Errorf("names %q %q", b, a)
			}
		})
	}
}

// A diff side of several runs is one configuration's repetitions: two
// groups, or a group mixed with plain runs, are refused.
func TestCheckDiffSide(t *testing.T) {
	plain := func(id string) *Run { return rep(id, "", 0, 0.3, 1000, true) }
	tests := []struct {
		name string
		runs []*Run
		err  string
	}{
		{"one run", []*Run{plain("x")}, ""},
		{"one group", reps("g", 0.3, 0.31), ""},
		{"runs of no group (reports from before groups)", []*Run{plain("x"), plain("y")}, ""},
		{"two groups", append(reps("g", 0.3, 0.31), reps("h", 0.3)...), "AFTER holds the repetitions of 2 configurations (g; h)"},
		{"a group and a plain run", append(reps("g", 0.3, 0.31), plain("x")), "AFTER mixes the repetitions of g with 1 run(s) of no repetition group"},
	}
	for _, tc := range tests {
		err := CheckDiffSide("AFTER", NewSet(tc.runs))
		if (err == nil) != (tc.err == "") || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.err)
		}
	}
}

// point is a load point's repetition for plan: rate λ (successful formal
// requests per second over 100 s), p95 TTFT, steady-state J/token ss and
// startup energy; invalid when !valid.
type point struct {
	rate, ttft, ss, startup float64
	valid                   bool
}

// sweepReps is group's repetitions at concurrency conc, W = conc/λ.
func sweepReps(group string, conc int, pts ...point) []*Run {
	var out []*Run
	for i, p := range pts {
		r := rep(fmt.Sprintf("%s-rep%d", group, i+1), group, i+1, p.ss, 1000, p.valid)
		r.Report.Run.Concurrency, r.Report.Run.Repetitions = conc, len(pts)
		r.Report.Stages = map[string]report.Stage{"formal": {DurationSeconds: 100}}
		r.Report.Requests.Succeeded = int(math.Round(p.rate * 100))
		r.Report.Latency.LatencySeconds.P50 = f64(float64(conc) / p.rate)
		r.Report.Latency.TTFTSeconds.P95 = f64(p.ttft)
		r.Report.Energy.StartupJoules, r.Report.Energy.ReleaseJoules = f64(p.startup), f64(3000)
		r.Report.LifecycleEstimate.PerRequestJoules = f64(40 * p.ss)
		out = append(out, r)
	}
	return out
}

// plan takes a load point's repetitions as one point on their medians:
// the admission limit, the replicas and the energy per day are the
// pool's, never its luckiest repetition's.
func TestPlanPooled(t *testing.T) {
	c4 := sweepReps("s-c4", 4, point{1.0, 0.20, 0.40, 20000, true}, point{1.1, 0.22, 0.41, 22000, true}, point{0.9, 0.21, 0.42, 30000, true})
	slos := []Constraint{{Metric: TTFTP95, Bound: 0.5, Upper: true, Flag: "--slo.ttft-p95"}}
	tests := []struct {
		name      string
		c8        []*Run
		admission string
		rate      float64 // the admission limit's λ
		fixed     float64 // E_start + E_release
		reason    string  // of s-c8's point
		warning   string
	}{
		{name: "the median fails the SLO where the best repetition meets it",
			c8:        sweepReps("s-c8", 8, point{2.0, 0.45, 0.4, 20000, true}, point{1.9, 0.55, 0.4, 20000, true}, point{1.8, 0.60, 0.4, 20000, true}),
			admission: "s-c4", rate: 1.0, fixed: 25000, reason: "latency.ttft_seconds.p95 550 ms > 500 ms (--slo.ttft-p95); median [min-max] of 3 valid of 3 repetitions"},
		{name: "an invalid repetition is not pooled",
			c8:        sweepReps("s-c8", 8, point{2.0, 0.30, 0.4, 20000, true}, point{2.6, 0.90, 0.4, 90000, false}, point{2.2, 0.35, 0.4, 24000, true}),
			admission: "s-c8", rate: 2.1, fixed: 25000, reason: "median [min-max] of 2 valid of 3 repetitions; not pooled: s-c8-rep2"},
		{name: "no valid repetition",
			c8:        sweepReps("s-c8", 8, point{2.0, 0.30, 0.4, 20000, false}, point{2.2, 0.35, 0.4, 24000, false}),
			admission: "s-c4", rate: 1.0, fixed: 25000, reason: "no valid repetition of 2"},
		{name: "disagreeing repetitions are planned on with a warning",
			c8:        sweepReps("s-c8", 8, point{2.0, 0.30, 0.40, 20000, true}, point{2.1, 0.30, 0.41, 21000, true}, point{2.2, 0.30, 0.55, 30000, true}),
			admission: "s-c8", rate: 2.1, fixed: 24000, reason: "disagree", warning: "the admission limit s-c8 is the median of repetitions that disagree: steady-state J/token beyond ±20% of the median: s-c8-rep3 +34%"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := MakePlan(NewSet(append(slices.Clone(c4), tc.c8...)).Pooled(), PlanOptions{TargetPeakRateRPS: 10, SLOs: slos, RestartsPerDay: 1})
			if err != nil {
				t.Fatal(err)
			}
			a := p.AdmissionLimit
			if a.RunID != tc.admission || math.Abs(*a.RateRPS-tc.rate) > 1e-9 || p.Replicas != int(math.Ceil(10/tc.rate)) ||
				p.FixedJoulesPerReplica == nil || *p.FixedJoulesPerReplica != tc.fixed {
				t.Errorf("admission %s at %v req/s, %d replicas, fixed %v J; want %s at %v, fixed %v", a.RunID, *a.RateRPS, p.Replicas, deref(p.FixedJoulesPerReplica), tc.admission, tc.rate, tc.fixed)
			}
			var out strings.Builder
			if err := WritePlan(&out, p); err != nil {
				t.Fatal(err)
			}
			if len(p.Points) != 2 || !strings.Contains(out.String(), tc.reason) || !strings.Contains(out.String(), "repetition group "+tc.admission+": λ, W and the energy figures below are medians") {
				t.Errorf("want 2 points and %q:\n%s", tc.reason, out.String())
			}
			if w := strings.Join(p.Warnings, "\n"); (tc.warning == "") != (w == "") || !strings.Contains(w, tc.warning) {
				t.Errorf("warnings %q, want %q", w, tc.warning)
			}
		})
	}
}

// A run named like a group beside the group's repetitions (bench --run-id g,
// then --run-id g --repeat 2) stays apart from the pool, under its own name.
func TestPooledNameClash(t *testing.T) {
	runs := append(reps("g", 0.40, 0.42), rep("g", "", 0, 0.30, 1000, true))
	var names []string
	for _, r := range NewSet(runs).Pooled() {
		names = append(names, r.Name)
	}
	if want := []string{"g [repetitions]", "g"}; !slices.Equal(names, want) {
		t.Errorf("names %q, want %q", names, want)
	}
	rec := Recommend(NewSet(runs).Pooled(), nil, -1, []Metric{SteadyStateJPT}, SteadyStateJPT)
	if rec.Best == nil || rec.Best.Name != "g" || !strings.Contains(rec.Excluded["g [repetitions]"], "dominated by g") {
		t.Errorf("best %v, excluded %v", rec.Best, rec.Excluded)
	}
}

// TestPoolSanity: a pooled run's output sanity is its valid repetitions'
// counts added up (the pareto and recommend tables show it), unknown
// when one of them has none; an invalid repetition's outputs do not count.
func TestPoolSanity(t *testing.T) {
	counts := func(req, empty, short int) *report.OutputCounts {
		return &report.OutputCounts{Requests: req, Empty: empty, Repeated: new(0), Short: new(short)}
	}
	runs := reps("a", 0.4, 0.5, -0.6)
	runs[0].Sanity, runs[1].Sanity, runs[2].Sanity = counts(100, 1, 2), counts(120, 0, 3), counts(90, 50, 50)
	pooled := NewSet(runs).Pooled()
	if len(pooled) != 1 || pooled[0].Sanity == nil {
		t.Fatalf("pooled %+v", pooled)
	}
	if got := outputsanity.Format(pooled[0].Sanity); got != outputsanity.Format(counts(220, 1, 5)) {
		t.Errorf("pooled sanity %s, want the two valid repetitions' %s", got, outputsanity.Format(counts(220, 1, 5)))
	}
	runs[1].Sanity = nil
	if s := NewSet(runs).Pooled()[0].Sanity; s != nil {
		t.Errorf("a repetition without counts: pooled sanity %+v, want unknown", s)
	}
}

// TestAgreementHeterogeneity: repetitions 0.40, 0.42, 0.44 agree within
// ±20% either way; with 1% standard errors (intervals.figures) Cochran's
// Q says they differ beyond their own intervals, with 5% ones it does
// not, and without standard errors it has nothing to say.
func TestAgreementHeterogeneity(t *testing.T) {
	for _, tc := range []struct {
		se     float64
		wantLo bool // p < 0.05
	}{{0.004, true}, {0.02, false}, {0, false}} {
		runs := reps("g", 0.40, 0.42, 0.44)
		for _, r := range runs {
			if tc.se > 0 {
				se := tc.se
				r.Report.Intervals.Figures = map[string]report.IntervalFigure{SteadyStateJPT.Key: {StandardError: &se, DF: 9}}
			}
		}
		a := poolRepetitions(runs)[0].Agreement()
		switch {
		case !a.Agree:
			t.Errorf("se %g: verdict %q, want agree", tc.se, a.Verdict)
		case tc.se == 0 && a.HeterogeneityP != nil:
			t.Errorf("no standard errors: heterogeneity p %v, want none", *a.HeterogeneityP)
		case tc.se > 0 && (a.HeterogeneityP == nil || (*a.HeterogeneityP < 0.05) != tc.wantLo):
			t.Errorf("se %g: heterogeneity p %v, want below 0.05: %v", tc.se, a.HeterogeneityP, tc.wantLo)
		}
	}
}
