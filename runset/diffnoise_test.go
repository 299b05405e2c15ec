package runset

import (
	"math"
	"strings"
	"testing"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/joulemark/joulemark/report"
)

// ciRun is a valid run whose steady-state J/token is v with the 95%
// interval v·(1 ± halfPct/100).
func ciRun(name string, v, halfPct float64) *Run {
	r := &Run{Name: name}
	r.Report.RunID, r.Report.Valid = name, true
	r.Report.SteadyState.Reached, r.Report.SteadyState.JoulesPerToken = true, &v
	if halfPct > 0 {
		h := v * halfPct / 100
		r.Report.Intervals.CI95 = map[string][2]float64{SteadyStateJPT.Key: {v - h, v + h}}
	}
	return r
}

func gate(t *testing.T, d DiffResult) Change {
	t.Helper()
	var out strings.Builder
	if err := WriteDiff(&out, d); err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + out.String())
	return d.Changes[0]
}

// TestDiffNoiseAware: a 5.5% regression within noisy runs' intervals is
// `~` and passes the 5% gate; the same change between tight runs fails it;
// a run without intervals is gated on its point values, as before.
func TestDiffNoiseAware(t *testing.T) {
	metrics := []Metric{SteadyStateJPT}
	noisy := gate(t, Diff(ciRun("b", 0.300, 8), ciRun("a", 0.3165, 8), metrics, 5))
	if noisy.Significant || noisy.Regressed || noisy.Test != TestCI {
		t.Errorf("noisy 5.5%%: significant %v, regressed %v, test %s (p %.3f); want ~ and passing", noisy.Significant, noisy.Regressed, noisy.Test, noisy.P)
	}
	if formatChange(noisy) != "~" {
		t.Errorf("noisy change printed %q, want ~", formatChange(noisy))
	}
	tight := gate(t, Diff(ciRun("b", 0.300, 1), ciRun("a", 0.3165, 1), metrics, 5))
	if !tight.Significant || !tight.Regressed {
		t.Errorf("tight 5.5%%: significant %v, regressed %v (p %.3f); want a failing regression", tight.Significant, tight.Regressed, tight.P)
	}
	small := gate(t, Diff(ciRun("b", 0.300, 1), ciRun("a", 0.309, 1), metrics, 5))
	if !small.Significant || small.Regressed {
		t.Errorf("tight 3%%: significant %v, regressed %v; want significant but under the threshold", small.Significant, small.Regressed)
	}
	bare := gate(t, Diff(ciRun("b", 0.300, 0), ciRun("a", 0.3165, 0), metrics, 5))
	if bare.Test != TestNone || !bare.Regressed {
		t.Errorf("no intervals: test %s, regressed %v; want untested and regressed", bare.Test, bare.Regressed)
	}
}

// seRun is a valid run whose steady-state J/token is v with standard
// error se on df degrees of freedom (its report's intervals.figures) and
// the matching Student's t interval.
func seRun(name string, v, se float64, df int) *Run {
	r := ciRun(name, v, 0)
	h := se * distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(df)}.Quantile(0.975)
	r.Report.Intervals.CI95 = map[string][2]float64{SteadyStateJPT.Key: {v - h, v + h}}
	r.Report.Intervals.Figures = map[string]report.IntervalFigure{SteadyStateJPT.Key: {StandardError: &se, DF: df}}
	return r
}

// TestDiffWelch: with the reports' standard errors and degrees of
// freedom, diff runs Welch's t test: a 3% change with 1% standard errors
// is significant on many degrees of freedom (p ≈ 0.034, as the z test)
// and not on 2 a side (Welch df ≈ 4, p ≈ 0.10), which a z test on the
// standard errors would call significant.
func TestDiffWelch(t *testing.T) {
	metrics := []Metric{SteadyStateJPT}
	many := gate(t, Diff(seRun("b", 1.00, 0.01, 200), seRun("a", 1.03, 0.01, 200), metrics, 1))
	if !many.Significant || math.Abs(many.P-0.034) > 0.003 {
		t.Errorf("df 200: p %.4f, significant %v; want ≈ 0.034, significant", many.P, many.Significant)
	}
	few := gate(t, Diff(seRun("b", 1.00, 0.01, 2), seRun("a", 1.03, 0.01, 2), metrics, 1))
	if few.Significant || few.P < 0.08 || few.P > 0.12 {
		t.Errorf("df 2: p %.4f, significant %v; want ≈ 0.10 and ~", few.P, few.Significant)
	}
}

// TestDiffRepetitions: with repetitions a side the rank test decides:
// overlapping repetitions are `~`, separated ones a regression. Where the
// rank test cannot reach p < 0.05 whatever the values (three a side, one
// run against five) the min–max ranges decide: apart is a regression,
// overlapping is `~`, and the note says so.
func TestDiffRepetitions(t *testing.T) {
	metrics := []Metric{SteadyStateJPT}
	runs := func(p string, vs ...float64) []*Run {
		var out []*Run
		for i, v := range vs {
			out = append(out, ciRun(p+string(rune('0'+i)), v, 1))
		}
		return out
	}
	tests := []struct {
		name                 string
		before, after        []*Run
		test                 string
		significant, regress bool
		note                 string
	}{
		{"noisy five a side", runs("b", 0.30, 0.33, 0.27, 0.31, 0.29), runs("a", 0.32, 0.28, 0.34, 0.30, 0.33), TestRank, false, false, ""},
		{"tight five a side 5.7%", runs("b", 0.300, 0.301, 0.299, 0.300, 0.302), runs("a", 0.317, 0.316, 0.318, 0.317, 0.315), TestRank, true, true, ""},
		{"three a side, ranges apart", runs("b", 0.300, 0.301, 0.299), runs("a", 0.317, 0.316, 0.318), TestRange, true, true, "3+3 too few for p < 0.05"},
		{"three a side, ranges overlap", runs("b", 0.300, 0.320, 0.299), runs("a", 0.317, 0.316, 0.318), TestRange, false, false, "judged on the min–max ranges"},
		{"one run against five, outside their range", runs("b", 0.300), runs("a", 0.317, 0.316, 0.318, 0.317, 0.315), TestRange, true, true, "1+5 too few"},
		{"three against seven (p ≥ 0.05 possible: 2/120)", runs("b", 0.300, 0.301, 0.299), runs("a", 0.317, 0.316, 0.318, 0.317, 0.315, 0.316, 0.318), TestRank, true, true, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := gate(t, DiffRuns(NewSet(tc.before), NewSet(tc.after), metrics, 5))
			if c.Test != tc.test || c.Significant != tc.significant || c.Regressed != tc.regress || !strings.Contains(c.Note, tc.note) {
				t.Errorf("test %s significant %v regressed %v note %q (p %.3f); want %s %v %v %q", c.Test, c.Significant, c.Regressed, c.Note, c.P, tc.test, tc.significant, tc.regress, tc.note)
			}
			if (c.Test == TestRange) != (uTestMinP(c.N1, c.N2) >= Alpha) {
				t.Errorf("n=%d+%d: smallest p %v", c.N1, c.N2, uTestMinP(c.N1, c.N2))
			}
		})
	}
	// The smallest two-sided p of the exact U test: 2/C(n1+n2, n1).
	for _, tc := range []struct {
		n1, n2 int
		p      float64
	}{{3, 3, 0.1}, {4, 4, 2.0 / 70}, {3, 4, 2.0 / 35}, {1, 5, 1.0 / 3}, {1, 1, 1}, {2, 8, 2.0 / 45}} {
		if got := uTestMinP(tc.n1, tc.n2); math.Abs(got-tc.p) > 1e-12 {
			t.Errorf("uTestMinP(%d, %d) = %v, want %v", tc.n1, tc.n2, got, tc.p)
		}
	}
}
