package choose

import (
	"strings"
	"testing"
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

// TestDiffRepetitions: with repetitions a side the rank test decides:
// overlapping repetitions are `~`, separated ones a regression; three a
// side can never reach p < 0.05 and say so.
func TestDiffRepetitions(t *testing.T) {
	metrics := []Metric{SteadyStateJPT}
	runs := func(p string, vs ...float64) []*Run {
		var out []*Run
		for i, v := range vs {
			out = append(out, ciRun(p+string(rune('0'+i)), v, 1))
		}
		return out
	}
	noisy := gate(t, DiffRuns(runs("b", 0.30, 0.33, 0.27, 0.31, 0.29), runs("a", 0.32, 0.28, 0.34, 0.30, 0.33), metrics, 5))
	if noisy.Significant || noisy.Regressed || noisy.Test != TestRank {
		t.Errorf("noisy repetitions: significant %v, regressed %v, test %s (p %.3f)", noisy.Significant, noisy.Regressed, noisy.Test, noisy.P)
	}
	tight := gate(t, DiffRuns(runs("b", 0.300, 0.301, 0.299, 0.300, 0.302), runs("a", 0.317, 0.316, 0.318, 0.317, 0.315), metrics, 5))
	if !tight.Significant || !tight.Regressed {
		t.Errorf("tight repetitions 5.7%%: significant %v, regressed %v (p %.3f)", tight.Significant, tight.Regressed, tight.P)
	}
	three := gate(t, DiffRuns(runs("b", 0.300, 0.301, 0.299), runs("a", 0.317, 0.316, 0.318), metrics, 5))
	if three.Significant || three.Note == "" {
		t.Errorf("three a side: significant %v, note %q; want ~ with a warning", three.Significant, three.Note)
	}
}
