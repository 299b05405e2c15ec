package analyze

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestSortEventsAsSortFunc checks that sortEvents leaves events in exactly
// slices.SortFunc's order, ties (same time and kind, different requests)
// included: the attribution's float sums depend on that order.
func TestSortEventsAsSortFunc(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, 7, 12, 50, 51, 1000, 100_000} {
		for _, distinct := range []int{1, 3, 100, 1 << 30} {
			evs := make([]event, n)
			for i := range evs {
				evs[i] = newEvent(float64(rng.IntN(distinct))/8, i, evKind(rng.IntN(3)))
			}
			if n > 20 { // runs and reversed runs, pdqsort's special cases
				slices.SortFunc(evs[:n/3], cmpEvents)
				slices.SortFunc(evs[n/3:2*n/3], func(a, b event) int { return cmpEvents(b, a) })
			}
			want := slices.Clone(evs)
			slices.SortFunc(want, cmpEvents)
			got := slices.Clone(evs)
			sortEvents(got)
			if !slices.Equal(got, want) {
				t.Fatalf("n=%d, %d distinct times: sortEvents differs from slices.SortFunc", n, distinct)
			}
		}
	}
}
