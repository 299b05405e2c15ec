package analyze

import (
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
)

// TestPercentilesBySelection checks percentilesOf and medianOf (selection) against the
// sort and gonum's nearest rank it replaces: random, duplicated, sorted,
// reversed values, +Inf (failed requests), a NaN, a negative zero.
func TestPercentilesBySelection(t *testing.T) {
	sorted := func(v []float64) Percentiles {
		s := slices.Clone(v)
		slices.Sort(s)
		f := func(p float64) *float64 { return finite(percentile(s, p)) }
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
			if got, want := medianOf(slices.Clone(v)), median(s); math.Float64bits(got) != math.Float64bits(want) && !(got != got && want != want) {
				t.Errorf("n=%d %s: median %v, want %v", n, kind, got, want)
			}
			want := sorted(v)
			if got := percentilesOf(slices.Clone(v)); !reflect.DeepEqual(got, want) {
				t.Errorf("n=%d %s: got %s, want %s", n, kind, show(got), show(want))
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
