package stats

import (
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
)

// TestPercentilesBySelection checks Of and Median (selection), and OfSorted
// where it applies (no NaN, no −0), against the
// sort and gonum's nearest rank it replaces: random, duplicated, sorted,
// reversed values, +Inf (failed requests), a NaN, a negative zero.
func TestPercentilesBySelection(t *testing.T) {
	sorted := func(v []float64) Percentiles {
		s := slices.Clone(v)
		slices.Sort(s)
		f := func(p float64) *float64 { return Finite(Percentile(s, p)) }
		return Percentiles{P50: f(50), P90: f(90), P95: f(95), P99: f(99)}
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for _, n := range []int{1, 2, 3, 9, 17, 20, 100, 101, 1000, 12345} {
		for _, kind := range []string{"random", "few", "sorted", "reversed", "inf", "nan", "negzero"} {
			v := make([]float64, n)
			for i := range v {
				switch kind {
				case "few":
					v[i] = float64(rng.IntN(4))
				case "sorted", "reversed":
					v[i] = float64(i) / 7
				default:
					v[i] = rng.Float64()
				}
			}
			switch kind {
			case "reversed":
				slices.Reverse(v)
			case "inf":
				for i := range v {
					if rng.IntN(20) == 0 {
						v[i] = math.Inf(1)
					}
				}
			case "nan":
				v[rng.IntN(n)] = math.NaN()
			case "negzero":
				v[rng.IntN(n)] = math.Copysign(0, -1)
			}
			s := slices.Clone(v)
			slices.Sort(s)
			if got, want := Median(slices.Clone(v)), sortedMedian(s); math.Float64bits(got) != math.Float64bits(want) && !(got != got && want != want) {
				t.Errorf("n=%d %s: median %v, want %v", n, kind, got, want)
			}
			want := sorted(v)
			if got := Of(slices.Clone(v)); !reflect.DeepEqual(got, want) {
				t.Errorf("n=%d %s: got %s, want %s", n, kind, show(got), show(want))
			}
			if kind != "nan" && kind != "negzero" {
				if got := OfSorted(s); !reflect.DeepEqual(got, want) {
					t.Errorf("n=%d %s: OfSorted %s, want %s", n, kind, show(got), show(want))
				}
			}
		}
	}
}

func show(p Percentiles) []any {
	var out []any
	for _, x := range []*float64{p.P50, p.P90, p.P95, p.P99} {
		if x == nil {
			out = append(out, nil)
		} else {
			out = append(out, *x)
		}
	}
	return out
}

func TestPercentiles(t *testing.T) {
	inf := math.Inf(1)
	tests := []struct {
		name string
		v    []float64
		want [4]float64 // p50 p90 p95 p99; NaN = null
	}{
		{"1..10", []float64{10, 9, 8, 7, 6, 5, 4, 3, 2, 1}, [4]float64{5, 9, 10, 10}},
		{"failures are the slowest", []float64{1, 2, 3, inf}, [4]float64{2, math.NaN(), math.NaN(), math.NaN()}},
		{"one failure in 20", []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, inf}, [4]float64{10, 18, 19, math.NaN()}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := Of(slices.Clone(tt.v))
			for i, got := range []*float64{p.P50, p.P90, p.P95, p.P99} {
				want := tt.want[i]
				switch {
				case math.IsNaN(want) && got != nil:
					t.Errorf("percentile %d = %g, want null", i, *got)
				case !math.IsNaN(want) && (got == nil || *got != want):
					t.Errorf("percentile %d = %v, want %g", i, got, want)
				}
			}
		})
	}
}

func sortedMedian(s []float64) float64 {
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// Of is nearest rank: the ceil(q·n)-th smallest value, for every
// sample size up to 2000 (the values given unsorted).
func TestPercentilesNearestRank(t *testing.T) {
	for n := 1; n <= 2000; n++ {
		v := make([]float64, n)
		for i := range v {
			v[i] = float64((i * 7919) % n) // a permutation of 0..n-1 (7919 is prime)
		}
		p := Of(v)
		for _, c := range []struct {
			q   float64
			got *float64
		}{{.5, p.P50}, {.9, p.P90}, {.95, p.P95}, {.99, p.P99}} {
			if want := math.Ceil(c.q*float64(n)) - 1; c.got == nil || *c.got != want {
				t.Fatalf("n=%d: p%g = %v, want %g", n, 100*c.q, c.got, want)
			}
		}
	}
}
