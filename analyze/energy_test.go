package analyze

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func samples(ts, vs []float64) []Sample {
	s := make([]Sample, len(ts))
	for i := range ts {
		s[i] = Sample{ts[i], vs[i]}
	}
	return s
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

func TestCurveInterpolation(t *testing.T) {
	tests := []struct {
		name    string
		s       []Sample
		tol     float64
		x       float64
		want    float64
		wantOK  bool
		between [2]float64 // when set, check between(a,b) == wantBetween
		wantBtw float64
	}{
		{name: "on a sample", s: samples([]float64{0, 1, 2}, []float64{0, 10, 30}), tol: 2, x: 1, want: 10, wantOK: true},
		{name: "mid first interval", s: samples([]float64{0, 1, 2}, []float64{0, 10, 30}), tol: 2, x: 0.5, want: 5, wantOK: true},
		{name: "mid second interval", s: samples([]float64{0, 1, 2}, []float64{0, 10, 30}), tol: 2, x: 1.5, want: 20, wantOK: true,
			between: [2]float64{0.5, 1.5}, wantBtw: 15},
		// Raw 100,110,5,15: the drop to 5 is a reset, so 5 J count.
		{name: "counter reset", s: samples([]float64{0, 1, 2, 3}, []float64{100, 110, 5, 15}), tol: 2, x: 2.5, want: 20, wantOK: true,
			between: [2]float64{0, 3}, wantBtw: 25},
		{name: "extrapolate before first within tol", s: samples([]float64{1, 2}, []float64{10, 20}), tol: 2, x: 0, want: -10, wantOK: true},
		{name: "extrapolate after last within tol", s: samples([]float64{1, 2}, []float64{10, 20}), tol: 2, x: 3.5, want: 25, wantOK: true},
		{name: "clamp before first beyond tol", s: samples([]float64{1, 2}, []float64{10, 20}), tol: 2, x: -5, want: 0, wantOK: false},
		{name: "clamp after last beyond tol", s: samples([]float64{1, 2}, []float64{10, 20}), tol: 2, x: 9, want: 10, wantOK: false},
		{name: "empty", s: nil, tol: 2, x: 1, want: 0, wantOK: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cv := newCurve(tt.s, tt.tol)
			got, ok := cv.at(tt.x)
			if !near(got, tt.want) || ok != tt.wantOK {
				t.Errorf("at(%g) = %g, %v; want %g, %v", tt.x, got, ok, tt.want, tt.wantOK)
			}
			if tt.between != [2]float64{} {
				b, ok := cv.between(tt.between[0], tt.between[1])
				if !near(b, tt.wantBtw) || !ok {
					t.Errorf("between(%v) = %g, %v; want %g", tt.between, b, ok, tt.wantBtw)
				}
			}
			// totalAt must agree with at.
			if got2 := totalAt([]curve{cv}, []float64{tt.x})[0]; !near(got2, got) {
				t.Errorf("totalAt(%g) = %g, at = %g", tt.x, got2, got)
			}
		})
	}
}

func TestTotalAtSumsGPUs(t *testing.T) {
	a := newCurve(samples([]float64{0, 2, 4}, []float64{0, 20, 40}), 1)  // 10 W
	b := newCurve(samples([]float64{1, 3, 5}, []float64{0, 60, 120}), 1) // 30 W
	xs := []float64{1, 2, 2.5, 4, 5}
	got := totalAt([]curve{a, b}, xs)
	want := []float64{10, 20 + 30, 25 + 45, 40 + 90, 40 + 120}
	// a at 5 is beyond its last sample (4) by 1 = tol: extrapolated to 50.
	want[4] = 50 + 120
	for i := range xs {
		if !near(got[i], want[i]) {
			t.Errorf("total at %g = %g, want %g", xs[i], got[i], want[i])
		}
	}
}

func TestCoverage(t *testing.T) {
	ts := []float64{0, 1, 2, 3, 7, 8, 9, 10}
	s := samples(ts, make([]float64, len(ts)))
	tests := []struct {
		name     string
		from, to float64
		want     float64
		gaps     int
	}{
		{"gap 3..7 in 0..10", 0, 10, 0.6, 1},
		{"no gap in 0..3", 0, 3, 1, 0},
		{"leading gap from -5", -5, 10, 1 - 9.0/15, 2},
		{"trailing gap to 20", 0, 20, 1 - 14.0/20, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, gaps := coverage(s, tt.from, tt.to, medianInterval(s))
			if !near(got, tt.want) || len(gaps) != tt.gaps {
				t.Errorf("coverage = %g with %d gaps %v; want %g with %d", got, len(gaps), gaps, tt.want, tt.gaps)
			}
		})
	}
	if got, _ := coverage(nil, 0, 10, math.NaN()); got != 0 {
		t.Errorf("empty series coverage = %g, want 0", got)
	}
}

// TestCounterUncertainty: power steps from 100 W to 300 W at t = 1.5 s
// between counter samples at 1 s and 2 s. Linear interpolation at 1.5 reads
// 200 J where the truth is 150 J: 50 J off, exactly the bound
// (0.5·0.5/1 s)·(300−100 W). At a sample the bound is 0.
func TestCounterUncertainty(t *testing.T) {
	cv := newCurve([]Sample{{0, 0}, {1, 100}, {2, 300}, {3, 600}}, 0)
	got, _ := cv.at(1.5)
	truth := 150.0
	unc := cv.uncertainty(1.5)
	if unc != 50 || math.Abs(got-truth) > unc+1e-9 {
		t.Fatalf("at(1.5) = %v (truth %v), uncertainty %v: want 50 and the error within it", got, truth, unc)
	}
	if u := cv.uncertainty(1); u != 0 {
		t.Errorf("uncertainty at a sample = %v, want 0", u)
	}
	if u := newCurve([]Sample{{0, 0}, {1, 100}, {2, 200}}, 0).uncertainty(1.5); u != 0 {
		t.Errorf("constant power: uncertainty %v, want 0", u)
	}
	for _, tc := range []struct{ x, want float64 }{{0.5, 100}, {1.5, 200}, {2.5, 300}, {-1, 100}, {9, 300}} {
		if p := cv.powerAt(tc.x); p != tc.want {
			t.Errorf("powerAt(%v) = %v, want %v", tc.x, p, tc.want)
		}
	}
}

// TestCounterBracket: a counter's value between samples lies between
// theirs; outside the sampled range it is bounded on one side only.
func TestCounterBracket(t *testing.T) {
	cv := newCurve(samples([]float64{10, 15, 20}, []float64{100, 160, 160}), 10)
	inf := math.Inf(1)
	for _, tc := range []struct{ x, lo, hi float64 }{
		{12, 0, 60}, {15, 60, 60}, {17, 60, 60}, {5, -inf, 0}, {25, 60, inf},
	} {
		if lo, hi := cv.bracket(tc.x); lo != tc.lo || hi != tc.hi {
			t.Errorf("bracket(%g) = [%g, %g], want [%g, %g]", tc.x, lo, hi, tc.lo, tc.hi)
		}
	}
}

// totalAt is the sum of the curves at each of the sorted times xs, read
// through the attribution's totalCursor.
func totalAt(curves []curve, xs []float64) []float64 {
	out := make([]float64, len(xs))
	tc := newTotalCursor(curves)
	for i, x := range xs {
		out[i] = tc.at(x)
	}
	return out
}

// TestTotalCursorAsBefore: the cursor with each curve's segment held
// (segCursor) sums the same values, bit for bit, as the cursor that read
// every segment from the curve at every time (totalCursorReference):
// curves with no sample, one, repeated times, no tolerance, and times
// before, between, on and after the samples.
func TestTotalCursorAsBefore(t *testing.T) {
	for seed := range uint64(40) {
		rng := rand.New(rand.NewPCG(seed, 11))
		curves := make([]curve, 1+rng.IntN(5))
		for j := range curves {
			var s []Sample
			tt, c := float64(rng.IntN(10)), 0.0
			for range rng.IntN(30) {
				s = append(s, Sample{tt, c})
				tt += float64(rng.IntN(3)) / 2 // repeated times too
				c += rng.Float64() * 100
			}
			tol := []float64{1, 0, -1, math.NaN()}[rng.IntN(4)]
			curves[j] = newCurve(s, tol)
		}
		xs := make([]float64, 200)
		for i := range xs {
			xs[i] = rng.Float64()*30 - 2
			if rng.IntN(4) == 0 {
				xs[i] = float64(rng.IntN(60)) / 2 // on a sample's time
			}
		}
		slices.Sort(xs)
		tc, ref := newTotalCursor(curves), &totalCursorReference{curves: curves, k: make([]int, len(curves))}
		for _, x := range xs {
			if got, want := tc.at(x), ref.at(x); math.Float64bits(got) != math.Float64bits(want) {
				t.Fatalf("seed %d: at(%v) = %v, before %v", seed, x, got, want)
			}
		}
	}
}

// totalCursorReference is totalCursor as it was before it held each
// curve's segment.
type totalCursorReference struct {
	curves []curve
	k      []int
}

func (tc *totalCursorReference) at(x float64) float64 {
	sum := 0.0
	for j := range tc.curves {
		cv := &tc.curves[j]
		n := len(cv.t)
		if n >= 2 && cv.tol >= 0 && x > cv.t[0] && x < cv.t[n-1] {
			t := cv.t[:n]
			k := tc.k[j]
			for t[k+1] < x {
				k++
			}
			tc.k[j] = k
			t0, t1, c0 := t[k], t[k+1], cv.c[k]
			if t1 == t0 {
				sum += c0
			} else {
				sum += c0 + (cv.c[k+1]-c0)*(x-t0)/(t1-t0)
			}
			continue
		}
		switch {
		case n == 0:
		case n == 1:
			sum += cv.c[0]
		case x <= cv.t[0]:
			sum += cv.seg(0, x)
		case x >= cv.t[n-1]:
			sum += cv.seg(n-2, x)
		default:
			k := tc.k[j]
			for k+1 < n && cv.t[k+1] < x {
				k++
			}
			tc.k[j] = k
			sum += cv.seg(k, x)
		}
	}
	return sum
}
