package analyze

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/joulemark/joulemark/internal/stats"
	"github.com/joulemark/joulemark/report"
)

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
// figures and are reproducible; its 100 s formal stage is too short for
// the J/token figures' batches of at least minEnergyBatchSeconds, and
// they say how long a formal stage would give one.
func TestFixtureIntervals(t *testing.T) {
	r, _ := fixtureReport(t)
	iv := r.Intervals
	if iv.Reason != "" || len(iv.CI95) == 0 {
		t.Fatalf("no intervals: %q", iv.Reason)
	}
	point := map[string]*float64{report.KeyThroughput: r.ThroughputTokensPerSecond, report.KeyGoodputRatio: r.Goodput.Ratio, "latency.ttft_seconds.p50": r.Latency.TTFTSeconds.P50}
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
	for _, k := range []string{report.KeySteadyJPT, report.KeyLifecycleJPT, report.KeyJoulesPerGood} {
		if why := iv.Figures[k].Reason; !strings.Contains(why, "a formal stage of about 1") {
			t.Errorf("%s: reason %q, want the formal stage (over 100 s) that would give one", k, why)
		}
	}
	// Every figure has an interval or says why not (the p99s reach the
	// fixture's failed request).
	for _, f := range intervalKeys {
		_, has := iv.CI95[f.key]
		why := iv.Figures[f.key].Reason
		if has == (why != "") || iv.Figures[f.key].Estimand == "" {
			t.Errorf("%s: interval %v, reason %q, estimand %q: want one of the first two and an estimand", f.key, has, why, iv.Figures[f.key].Estimand)
		}
	}
	if why := iv.Figures["latency.ttft_seconds.p99"].Reason; !strings.Contains(why, "failed requests") {
		t.Errorf("TTFT p99: reason %q, want the failed requests named", why)
	}
	r2, _ := fixtureReport(t)
	if lo, hi, _ := r2.CI95(report.KeyThroughput); [2]float64{lo, hi} != iv.CI95[report.KeyThroughput] {
		t.Errorf("not reproducible: %v vs %v", [2]float64{lo, hi}, iv.CI95[report.KeyThroughput])
	}
}

// TestPlanBatchesConstant: a series without variance (a goodput of 100%:
// no request missed) has no correlation to span, so it takes the most
// batches rather than failing for too few.
func TestPlanBatchesConstant(t *testing.T) {
	if p := planBatches(make([]float64, 59), 0, 0); p.B != maxBatches {
		t.Errorf("constant series of 59 bins: %d batches, want %d", p.B, maxBatches)
	}
}

// TestLatencyPercentilesAsOf: the latency percentiles read from the sorted
// lists are stats.Of of each list in completion order (failures +Inf, a
// TTFT only where there is one), as requests() once took them, bit for
// bit, with a NaN latency or a −0 TTFT among them in some draws (stats.Of
// of the list in completion order then).
func TestLatencyPercentilesAsOf(t *testing.T) {
	for seed := range uint64(30) {
		rng := rand.New(rand.NewPCG(seed, 13))
		d := &RunData{}
		for i := range 1 + rng.IntN(300) {
			send := float64(i) / 10
			lat := float64(1+rng.IntN(40)) / 8
			q := Request{Send: send, End: send + lat, Latency: lat, OutputTokens: int32(rng.IntN(30)), Success: rng.IntN(10) > 0, Formal: rng.IntN(6) > 0}
			if rng.IntN(3) > 0 {
				q.HasTTFT, q.TTFT = true, float64(rng.IntN(8))/16*lat
			}
			switch rng.IntN(60) {
			case 0:
				q.Latency = math.NaN()
			case 1:
				q.HasTTFT, q.TTFT = true, math.Copysign(0, -1)
			}
			d.Requests = append(d.Requests, q)
		}
		c := &computation{d: d}
		for i := range d.Requests {
			if d.Requests[i].Formal {
				c.formal = append(c.formal, int32(i))
			}
		}
		for k := range 3 {
			var list []float64
			for _, i := range c.formal {
				q := &d.Requests[i]
				switch {
				case !q.Success:
					list = append(list, math.Inf(1))
				case k == 0 && q.HasTTFT:
					list = append(list, q.TTFT)
				case k == 1:
					if x, ok := tpot(*q); ok {
						list = append(list, x)
					}
				case k == 2:
					list = append(list, q.Latency)
				}
			}
			want := stats.Of(list)
			got := c.latencyPercentiles(k, c.latencyValues(k, nil))
			if fmt.Sprint(pctBits(got)) != fmt.Sprint(pctBits(want)) {
				t.Fatalf("seed %d, list %d: %v, want %v", seed, k, pctBits(got), pctBits(want))
			}
		}
	}
}

// pctBits is each percentile's bits (0 for none).
func pctBits(p stats.Percentiles) [4]uint64 {
	var out [4]uint64
	for i, x := range []*float64{p.P50, p.P90, p.P95, p.P99} {
		if x != nil {
			out[i] = math.Float64bits(*x)
		}
	}
	return out
}
