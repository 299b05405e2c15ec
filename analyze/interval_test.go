package analyze

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/joulemark/joulemark/internal/stats"
)

// arRun is a sequence of requests whose J/token follows an AR(1)
// process around mu (neighbours correlated, as overlapping requests are)
// and whose token counts vary independently: Σjoules/Σtokens estimates mu.
func arRun(rng *rand.Rand, n int, mu, phi, sigma float64) (joules, tokens []float64) {
	e := rng.NormFloat64() * sigma / math.Sqrt(1-phi*phi) // stationary start
	for range n {
		e = phi*e + sigma*rng.NormFloat64()
		t := float64(50 + rng.IntN(200))
		joules, tokens = append(joules, t*(mu+e)), append(tokens, t)
	}
	return joules, tokens
}

// ciCoverage is the share of runs whose 95% block bootstrap interval holds
// the true J/token.
func ciCoverage(blockLen int) float64 {
	const runs, n, mu = 250, 500, 0.4
	rng := rand.New(rand.NewPCG(7, 11))
	hit := 0
	for range runs {
		j, t := arRun(rng, n, mu, 0.4, 0.04)
		lo, hi, ok := percentileInterval(ratioReplicates(j, t, blockLen, 300), 0.95)
		if ok && lo <= mu && mu <= hi {
			hit++
		}
	}
	return float64(hit) / runs
}

// TestIntervalCoverage: about 95% of the block bootstrap's intervals hold
// the true value on correlated data of known mean; resampling requests one
// by one (block length 1, the mechanism off) covers far less.
func TestIntervalCoverage(t *testing.T) {
	l := int(math.Ceil(math.Cbrt(500))) * 2 // the rule's n^(1/3), or k = 16 requests in flight
	if c := ciCoverage(l); c < 0.90 || c > 0.985 {
		t.Errorf("block length %d: coverage %.3f, want about 0.95", l, c)
	} else {
		t.Logf("block length %d: coverage %.3f", l, c)
	}
	if c := ciCoverage(1); c > 0.88 {
		t.Errorf("block length 1 on correlated data: coverage %.3f, want it well under 0.95 (the blocks are what make it right)", c)
	} else {
		t.Logf("block length 1: coverage %.3f", c)
	}
}

// TestWeightedPercentiles: with every weight 1 the resample's percentiles
// are percentilesOf's, failures (+Inf) included; weights count repeats.
func TestWeightedPercentiles(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var v []float64
	var rk []ranked
	for i := range 257 {
		x := rng.ExpFloat64()
		if i%50 == 0 {
			x = math.Inf(1)
		}
		v, rk = append(v, x), append(rk, ranked{x, int32(i)})
	}
	slices.SortFunc(rk, func(a, b ranked) int { return cmpF(a.v, b.v) })
	w := make([]int32, len(v))
	for i := range w {
		w[i] = 1
	}
	one := countPerBlock(rk, len(v))
	got, ok := weightedPercentiles(rk, w, one)
	want := stats.Of(slices.Clone(v))
	for i, p := range []*float64{want.P50, want.P90, want.P95, want.P99} {
		switch {
		case !ok:
			t.Fatal("no percentiles")
		case p == nil && !math.IsInf(got[i], 1):
			t.Errorf("%s: got %v, want +Inf (a failure)", pctNames[i], got[i])
		case p != nil && got[i] != *p:
			t.Errorf("%s: got %v, want %v", pctNames[i], got[i], *p)
		}
	}
	// Doubling every weight leaves the percentiles; weight on one value
	// only makes it every percentile; random weights match percentiles of
	// the values repeated.
	for i := range w {
		w[i] = 2
	}
	if g, _ := weightedPercentiles(rk, w, one); g != got {
		t.Errorf("doubled weights: %v, want %v", g, got)
	}
	clear(w)
	w[5] = 3
	if g, _ := weightedPercentiles(rk, w, one); g != [4]float64{v[5], v[5], v[5], v[5]} {
		t.Errorf("one value drawn: got %v, want all %v", g, v[5])
	}
	var rep []float64
	for i := range w {
		w[i] = int32(rng.IntN(4))
		for range w[i] {
			rep = append(rep, v[i])
		}
	}
	g, _ := weightedPercentiles(rk, w, one)
	want = stats.Of(slices.Clone(rep))
	for i, p := range []*float64{want.P50, want.P90, want.P95, want.P99} {
		if (p == nil) != math.IsInf(g[i], 1) || p != nil && g[i] != *p {
			t.Errorf("random weights %s: got %v, want %v", pctNames[i], g[i], deref(p))
		}
	}
}

func cmpF(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// TestBlockSet: 103 requests in blocks of about 10 are 10 consecutive
// blocks of 10 or 11; a resample draws 10 blocks.
func TestBlockSet(t *testing.T) {
	bs := newBlockSet(103, 10)
	size := map[int32]int{}
	for k, b := range bs.blockOf {
		size[b]++
		if k > 0 && b != bs.blockOf[k-1] && b != bs.blockOf[k-1]+1 {
			t.Fatalf("position %d in block %d after block %d", k, b, bs.blockOf[k-1])
		}
	}
	if len(size) != 10 {
		t.Fatalf("%d blocks, want 10", len(size))
	}
	for b, n := range size {
		if n != 10 && n != 11 {
			t.Errorf("block %d holds %d", b, n)
		}
	}
	for range 50 {
		sum := 0
		for _, x := range bs.resample() {
			sum += int(x)
		}
		if sum != 10 {
			t.Fatalf("resample drew %d blocks, want 10", sum)
		}
	}
}

// TestFixtureIntervals: the fixture run's intervals hold their point
// figures and are reproducible.
func TestFixtureIntervals(t *testing.T) {
	r, _ := fixtureReport(t)
	iv := r.Intervals
	if iv.Reason != "" || len(iv.CI95) == 0 {
		t.Fatalf("no intervals: %q", iv.Reason)
	}
	point := map[string]*float64{KeySteadyJPT: r.SteadyState.JoulesPerToken, KeyLifecycleJPT: r.FullLifecycleJoulesPerToken,
		KeyThroughput: r.ThroughputTokensPerSecond, KeyGoodputRatio: r.Goodput.Ratio, "latency.ttft_seconds.p50": r.Latency.TTFTSeconds.P50}
	for k, p := range point {
		ci, ok := iv.CI95[k]
		if p == nil || !ok {
			t.Errorf("%s: value %v, interval %v", k, p, ok)
			continue
		}
		if !(ci[0] <= *p && *p <= ci[1]) {
			t.Errorf("%s: %v not inside [%v, %v]", k, *p, ci[0], ci[1])
		}
	}
	if ci := iv.CI95[KeyThroughput]; !(ci[0] < ci[1]) {
		t.Errorf("throughput interval [%v, %v] has no width", ci[0], ci[1])
	}
	r2, _ := fixtureReport(t)
	if lo, hi, _ := r2.CI95(KeySteadyJPT); [2]float64{lo, hi} != iv.CI95[KeySteadyJPT] {
		t.Errorf("not reproducible: %v vs %v", [2]float64{lo, hi}, iv.CI95[KeySteadyJPT])
	}
}
