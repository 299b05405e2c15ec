package analyze

import (
	"strings"
	"testing"

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
