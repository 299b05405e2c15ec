package analyze

import (
	"math"
	"math/rand/v2"
	"slices"

	"github.com/joulemark/joulemark/internal/stats"
	"gonum.org/v1/gonum/stat"
)

// The block bootstrap the prefill/decode fit's intervals use
// (docs/analyze.md, "Prefill and decode energy").
const (
	bootstrapSeed = 1
	// minBlocks is the fewest blocks a sequence must hold for an interval.
	minBlocks = 10
	// maxResamples and minResamples bound the resamples.
	maxResamples, minResamples = 1000, 200
)

// percentileInterval is the (1−conf)/2 and (1+conf)/2 quantiles of the
// replicates (linear interpolation); false when an end is not finite.
func percentileInterval(reps []float64, conf float64) (lo, hi float64, ok bool) {
	if len(reps) == 0 || slices.ContainsFunc(reps, math.IsNaN) {
		return 0, 0, false
	}
	slices.Sort(reps)
	lo = stat.Quantile((1-conf)/2, stat.LinInterp, reps, nil)
	hi = stat.Quantile((1+conf)/2, stat.LinInterp, reps, nil)
	return lo, hi, stats.Finite(lo) != nil && stats.Finite(hi) != nil
}

// blockSet splits a sequence of n into b = max(1, ⌊n/L⌋) consecutive
// blocks of ⌊n/b⌋ or ⌈n/b⌉ (the non-overlapping block bootstrap,
// Carlstein 1986); a resample draws b of them with replacement.
type blockSet struct {
	b       int
	blockOf []int32 // the block of each position
	rng     *rand.Rand
	w       []int32
}

func newBlockSet(n, l int) *blockSet {
	b := max(1, n/max(1, l))
	bs := &blockSet{b: b, blockOf: make([]int32, n), rng: rand.New(rand.NewPCG(bootstrapSeed, uint64(n))), w: make([]int32, b)}
	for j := range b {
		for k := j * n / b; k < (j+1)*n/b; k++ {
			bs.blockOf[k] = int32(j)
		}
	}
	return bs
}

// resample returns how many times each block is drawn (reused by the next
// call).
func (bs *blockSet) resample() []int32 {
	clear(bs.w)
	for range bs.b {
		bs.w[bs.rng.IntN(bs.b)]++
	}
	return bs.w
}
