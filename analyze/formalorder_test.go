package analyze

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestSortFormal checks sortFormal against a plain sort under cmpFormal:
// requests in a few ascending runs (merged), in many runs (sorted), with
// equal ends, sends and slots and NaN, all of them or every other one.
func TestSortFormal(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{0, 1, 2, 10, 1000, 50_000} {
		for _, runs := range []int{1, 2, 7, 64, 5000} {
			reqs := make([]Request, n)
			for k := range reqs {
				reqs[k] = Request{End: float64(rng.IntN(50)), Send: float64(rng.IntN(3)), Slot: string(rune('a' + rng.IntN(3)))}
				if rng.IntN(100) == 0 {
					reqs[k].End = math.NaN()
				}
			}
			// Ascending runs of about n/runs requests.
			for lo := 0; lo < n; lo += max(1, n/runs) {
				hi := min(n, lo+max(1, n/runs))
				slices.SortFunc(reqs[lo:hi], func(a, b Request) int {
					return cmpFormal(&formalKey{a.End, a.Send, a.Slot, 0}, &formalKey{b.End, b.Send, b.Slot, 0})
				})
			}
			for _, step := range []int{1, 2} {
				var idx []int32
				for i := 0; i < n; i += step {
					idx = append(idx, int32(i))
				}
				want := slices.Clone(idx)
				slices.SortFunc(want, func(i, j int32) int {
					return cmpFormal(&formalKey{reqs[i].End, reqs[i].Send, reqs[i].Slot, int(i)}, &formalKey{reqs[j].End, reqs[j].Send, reqs[j].Slot, int(j)})
				})
				got := make([]int32, len(idx))
				sortFormal(reqs, slices.Clone(idx), got)
				if !slices.Equal(got, want) {
					t.Fatalf("n=%d, %d runs, every %d: got %v…, want %v…", n, runs, step, got[:min(len(got), 8)], want[:min(len(want), 8)])
				}
			}
		}
	}
}
