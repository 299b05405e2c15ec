package analyze

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestRadixSortFloats: the radix sort leaves the same bits in the same
// places as slices.Sort, on random, few distinct, negative, infinite,
// sorted and reversed values, and with a NaN or a −0 (slices.Sort then).
func TestRadixSortFloats(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, n := range []int{0, 1, 5, radixSmall, radixSmall + 1, 300, 5000, 100000} {
		for _, kind := range []string{"random", "few", "signed", "inf", "sorted", "reversed", "nan", "negzero"} {
			v := make([]float64, n)
			for i := range v {
				switch kind {
				case "few":
					v[i] = float64(rng.IntN(3))
				case "signed":
					v[i] = rng.NormFloat64() * 1e3
				case "sorted", "reversed":
					v[i] = float64(i) / 3
				default:
					v[i] = rng.ExpFloat64()
				}
				if kind == "inf" && rng.IntN(10) == 0 {
					v[i] = math.Inf(1 - 2*rng.IntN(2))
				}
			}
			switch {
			case kind == "reversed":
				slices.Reverse(v)
			case kind == "nan" && n > 0:
				v[rng.IntN(n)] = math.NaN()
			case kind == "negzero" && n > 0:
				v[rng.IntN(n)] = math.Copysign(0, -1)
			}
			want := slices.Clone(v)
			slices.Sort(want)
			radixSortFloats(v)
			for i := range v {
				if math.Float64bits(v[i]) != math.Float64bits(want[i]) {
					t.Fatalf("n=%d %s: [%d] = %v, want %v", n, kind, i, v[i], want[i])
				}
			}
		}
	}
}

// TestRadixSortByRuns: a sort by floatKey, its runs of equal keys (−0 and
// +0, NaNs, duplicates) then sorted by input position, is
// slices.SortStableFunc's order under cmp.Compare.
func TestRadixSortByRuns(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	type item struct {
		x float64
		i int
	}
	pool := []float64{math.NaN(), math.Copysign(0, -1), 0, 1, -1, math.Inf(1), math.Inf(-1), 2.5, 1e300, -1e-300}
	v := make([]item, 20000)
	for i := range v {
		x := pool[rng.IntN(len(pool))]
		if rng.IntN(2) == 0 {
			x = rng.NormFloat64()
		}
		v[i] = item{x, i}
	}
	want := slices.Clone(v)
	slices.SortStableFunc(want, func(a, b item) int { return cmp.Compare(a.x, b.x) })
	radixSortBy(v, func(it item) uint64 { return floatKey(it.x) })
	sortRuns(v, func(a, b item) bool { return cmp.Compare(a.x, b.x) == 0 }, func(a, b item) int { return cmp.Compare(a.i, b.i) })
	for k := range v {
		if v[k].i != want[k].i {
			t.Fatalf("[%d] = item %d (%v), want item %d (%v)", k, v[k].i, v[k].x, want[k].i, want[k].x)
		}
	}
}

// TestSortFormal: sortFormal is slices.SortFunc's order under
// cmpFormalReqs, with ends and sends tied, NaN and −0 among them.
func TestSortFormal(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	reqs := make([]Request, 5000)
	idx := make([]int32, len(reqs))
	for i := range reqs {
		reqs[i] = Request{Send: float64(rng.IntN(50)), End: float64(rng.IntN(200)) / 4, SlotRank: int32(rng.IntN(3))}
		switch rng.IntN(50) {
		case 0:
			reqs[i].End = math.NaN()
		case 1:
			reqs[i].End = math.Copysign(0, -1)
		case 2:
			reqs[i].Send = math.Copysign(0, -1)
		}
		idx[i] = int32(i)
	}
	want := slices.Clone(idx)
	slices.SortFunc(want, func(i, j int32) int { return cmpFormalReqs(reqs, i, j) })
	if got := sortFormal(reqs, idx); !slices.Equal(got, want) {
		t.Fatal("sortFormal's order differs from cmpFormalReqs'")
	}
}
