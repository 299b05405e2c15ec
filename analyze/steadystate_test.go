package analyze

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func TestWindowCV(t *testing.T) {
	x := []float64{1, 5, 1, 2, 2, 2, 4, 4}
	got := windowCV(x, 3)
	for i := range got {
		w := x[i : i+3]
		m := (w[0] + w[1] + w[2]) / 3
		v := 0.0
		for _, y := range w {
			v += (y - m) * (y - m)
		}
		want := math.Sqrt(v/3) / m
		if math.Abs(got[i]-want) > 1e-12 {
			t.Errorf("window %d: CV %g, want %g", i, got[i], want)
		}
	}
	if cv := windowCV([]float64{-1, 1}, 2)[0]; !math.IsInf(cv, 1) {
		t.Errorf("mean 0 CV = %g, want +Inf", cv)
	}
}

func TestSteadyStart(t *testing.T) {
	tests := []struct {
		name       string
		x          []float64
		w, k       int
		want       int
		reasonPart string
	}{
		// Windows at 3 ([2,2,2]) and 6 ([2,2,2]) are flat; everything
		// starting earlier has a window with CV > 0.2.
		{"found after warm-up noise", []float64{1, 5, 1, 2, 2, 2, 2, 2, 2}, 3, 2, 3, ""},
		{"found at 0", []float64{2, 2, 2, 2, 2, 2}, 3, 2, 0, ""},
		// 2.00 and 2.04: CV 0.0098 < 0.03.
		{"small wobble is steady", []float64{2, 2.04, 2, 2.04, 2, 2.04}, 3, 2, 0, ""},
		{"not found: oscillating", []float64{1, 2, 1, 2, 1, 2, 1}, 3, 2, -1, "no 2 consecutive windows of 3"},
		{"not found: too few", []float64{2, 2, 2, 2, 2}, 3, 2, -1, "only 5 successful"},
		// Steady only in the last window: 3 windows cannot fit after it.
		{"not found: steady too late", []float64{1, 9, 1, 9, 1, 9, 2, 2, 2}, 3, 3, -1, "no 3 consecutive"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, _, reason := steadyStart(tt.x, nil, tt.w, tt.k, 0.03)
			if got != tt.want {
				t.Errorf("start = %d (%s), want %d", got, reason, tt.want)
			}
			if !strings.Contains(reason, tt.reasonPart) {
				t.Errorf("reason %q lacks %q", reason, tt.reasonPart)
			}
		})
	}
}

func TestTPOT(t *testing.T) {
	got, ok := tpot(Request{HasTTFT: true, TTFT: 0.2, Latency: 1.2, OutputTokens: 11})
	if !ok || !near(got, 0.1) {
		t.Errorf("tpot = %g, %v; want 0.1", got, ok)
	}
	if _, ok := tpot(Request{HasTTFT: true, TTFT: 0.2, Latency: 1.2, OutputTokens: 1}); ok {
		t.Error("tpot defined for a one-token request")
	}
}

// TestWeightedWindowCV checks the token-weighted CV against its definition
// and that a short request's outlier, which fails the unweighted test,
// passes when weighed by its tokens (and fails again when it is long).
func TestWeightedWindowCV(t *testing.T) {
	x := []float64{1.0, 1.3, 1.0, 0.98, 1.02, 1.0}
	wt := []float64{150, 2, 150, 140, 150, 120}
	got := weightedWindowCV(x, wt, 3)
	for i := range got {
		var sw, sx float64
		for j := i; j < i+3; j++ {
			sw += wt[j]
			sx += wt[j] * x[j]
		}
		m := sx / sw
		v := 0.0
		for j := i; j < i+3; j++ {
			v += wt[j] * (x[j] - m) * (x[j] - m)
		}
		if want := math.Sqrt(v/sw) / m; math.Abs(got[i]-want) > 1e-12 {
			t.Errorf("window %d: weighted CV %g, want %g", i, got[i], want)
		}
	}
	if first, _, reason := steadyStart(x, nil, 3, 2, 0.03); first != -1 {
		t.Errorf("unweighted: start %d, want none (%s)", first, reason)
	}
	if first, _, reason := steadyStart(x, wt, 3, 2, 0.03); first != 0 {
		t.Errorf("token-weighted: start %d (%s), want 0", first, reason)
	}
	long := slices.Clone(wt)
	long[1] = 150
	if first, _, _ := steadyStart(x, long, 3, 2, 0.03); first != -1 {
		t.Errorf("token-weighted with a long outlier: start %d, want none", first)
	}
	if cv := weightedWindowCV([]float64{1, 2}, []float64{0, 0}, 2)[0]; !math.IsInf(cv, 1) {
		t.Errorf("no weight: CV %g, want +Inf", cv)
	}
}

// TestSteadyStartEndOfSequence is the end-of-sequence engine in small:
// geometric output lengths capped at 150, each request's J/token noisy by
// 0.3/√tokens around a level that ramps down from 1.5 to 1.0 over the
// first 100 requests (a warm-up). Weighted by tokens the steady state starts
// after the ramp; weighted alike, the short requests' noise keeps every
// window above the threshold; and a level that swings by 15% every 25
// requests is never steady under either weighting.
func TestSteadyStartEndOfSequence(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	gen := func(ramp int, swing float64) ([]float64, []float64) {
		x, wt := make([]float64, 800), make([]float64, 800)
		for i := range x {
			tok := min(1+math.Floor(rng.ExpFloat64()*256), 150)
			level := 1.0 + 0.5*max(0, float64(ramp-i))/float64(ramp)
			if i/25%2 == 1 {
				level += swing
			}
			x[i] = level * (1 + 0.3/math.Sqrt(tok)*rng.NormFloat64())
			wt[i] = tok
		}
		return x, wt
	}
	x, wt := gen(100, 0)
	first, cv, reason := steadyStart(x, wt, 100, 3, 0.03)
	if first < 50 || first > 200 {
		t.Errorf("tokens: start %d (CV %.4f, %s), want after the ramp (50–200)", first, cv, reason)
	}
	if first, cv, _ := steadyStart(x, nil, 100, 3, 0.03); first != -1 {
		t.Errorf("requests: start %d (CV %.4f), want none", first, cv)
	}
	x, wt = gen(100, 0.15)
	for _, w := range [][]float64{wt, nil} {
		if first, cv, _ := steadyStart(x, w, 100, 3, 0.03); first != -1 {
			t.Errorf("a level swinging by 15%% every 25 requests: start %d (CV %.4f, weighted %v), want none", first, cv, w != nil)
		}
	}
}

// TestWeightedWindowCVPrefixArrays: the running sums give, bit for bit,
// the CVs of the prefix arrays they replaced (each window's sums as
// differences of whole-prefix sums), weighted and not.
func TestWeightedWindowCVPrefixArrays(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := range 50 {
		n, w := 1+rng.IntN(300), 1+rng.IntN(40)
		x, wt := make([]float64, n), make([]float64, n)
		for i := range x {
			x[i], wt[i] = 0.3+rng.NormFloat64()*0.05, float64(1+rng.IntN(500))
		}
		for _, weights := range [][]float64{nil, wt} {
			got, want := weightedWindowCV(x, weights, w), prefixArrayCV(x, weights, w)
			if len(got) != len(want) {
				t.Fatalf("trial %d: %d CVs, want %d", trial, len(got), len(want))
			}
			for i := range got {
				if math.Float64bits(got[i]) != math.Float64bits(want[i]) {
					t.Fatalf("trial %d (n %d, w %d, weighted %v): CV %d is %v, want %v", trial, n, w, weights != nil, i, got[i], want[i])
				}
			}
		}
	}
}

// prefixArrayCV is weightedWindowCV as it was: prefix arrays of the sums.
func prefixArrayCV(x, wt []float64, w int) []float64 {
	n := len(x)
	if w <= 0 || n < w {
		return nil
	}
	shift := 0.0
	for _, v := range x {
		shift += v
	}
	shift /= float64(n)
	s0, s1, s2 := make([]float64, n+1), make([]float64, n+1), make([]float64, n+1)
	for i, v := range x {
		d, q := v-shift, 1.0
		if wt != nil {
			q = wt[i]
		}
		s0[i+1], s1[i+1], s2[i+1] = s0[i]+q, s1[i]+q*d, s2[i]+q*d*d
	}
	out := make([]float64, n-w+1)
	for i := range out {
		out[i] = cvOfSums(s0[i+w]-s0[i], s1[i+w]-s1[i], s2[i+w]-s2[i], shift)
	}
	return out
}
