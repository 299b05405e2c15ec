package analyze

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestSortFormal checks sortFormal against a plain sort under cmpFormal:
// keys in a few ascending runs (merged), in many runs (sorted), with equal
// ends, sends and slots and NaN.
func TestSortFormal(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{0, 1, 2, 10, 1000, 50_000} {
		for _, runs := range []int{1, 2, 7, 64, 5000} {
			keys := make([]formalKey, n)
			for k := range keys {
				keys[k] = formalKey{end: float64(rng.IntN(50)), send: float64(rng.IntN(3)), slot: string(rune('a' + rng.IntN(3))), i: rng.IntN(n)}
				if rng.IntN(100) == 0 {
					keys[k].end = math.NaN()
				}
			}
			// Ascending runs of about n/runs keys.
			for lo := 0; lo < n; lo += max(1, n/runs) {
				hi := min(n, lo+max(1, n/runs))
				slices.SortFunc(keys[lo:hi], func(a, b formalKey) int { return cmpFormal(&a, &b) })
			}
			want := slices.Clone(keys)
			slices.SortFunc(want, func(a, b formalKey) int { return cmpFormal(&a, &b) })
			got := make([]int, n)
			sortFormal(slices.Clone(keys), got)
			for k := range want {
				if got[k] != want[k].i {
					t.Fatalf("n=%d, %d runs: position %d holds %d, want %d", n, runs, k, got[k], want[k].i)
				}
			}
		}
	}
}
