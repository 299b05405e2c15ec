package analyze

import (
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"sort"
	"testing"

	"github.com/prometheus/common/model"
)

// TestFillInCompletionOrder: the requests filled window by window, beside
// each other, come out in the order of one stable sort of all of them by
// cmpFormalReqs (end, send, slot, then the series' label order and time),
// with ties across series in every way: equal ends, equal sends, equal
// slots, slots that sort differently as strings and as numbers ("10" <
// "9"), a NaN latency.
// Windows are filled in pieces of as few as 3 requests, so that pieces
// meet inside runs of equal ends.
func TestFillInCompletionOrder(t *testing.T) {
	defer func(n int) { minFillPiece = n }(minFillPiece)
	minFillPiece = 3
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 7))
		metrics, windows := randomRequestWindows(rng)
		want := inLabelOrder(metrics, windows)
		sortRequestsByCompletion(want)

		got := make([]Request, len(want))
		fillInCompletionOrder(got, windows, requestSeriesOf(metrics))
		if !slices.EqualFunc(got, want, sameRequest) {
			for i := range got {
				if !sameRequest(got[i], want[i]) {
					t.Fatalf("seed %d: request %d of %d is %+v, want %+v", seed, i, len(want), got[i], want[i])
				}
			}
		}
		for w := range windows {
			if windows[w] != nil {
				t.Fatalf("seed %d: window %d's requests kept after they were filled", seed, w)
			}
		}
	}
}

// sameRequest is == with a NaN equal to itself.
func sameRequest(a, b Request) bool {
	return reflect.DeepEqual(a, b) || fmt.Sprint(a) == fmt.Sprint(b)
}

// randomRequestWindows draws up to 30 series (slot and phase labels) of
// requests over 1 to 5 consecutive windows of 100 ms, ends on a coarse
// grid so that many series end together.
func randomRequestWindows(rng *rand.Rand) ([]model.Metric, [][]seriesValues) {
	metrics := make([]model.Metric, 1+rng.IntN(30))
	for i := range metrics {
		phase := "formal"
		if rng.IntN(4) == 0 {
			phase = "warmup"
		}
		metrics[i] = model.Metric{"run_id": "r", "phase": model.LabelValue(phase), "slot": model.LabelValue(fmt.Sprint(i % 12))}
	}
	windows := make([][]seriesValues, 1+rng.IntN(5))
	for w := range windows {
		for id := range metrics {
			if rng.IntN(5) == 0 {
				continue // no request of this series in this window
			}
			var reqs []reqVals
			for ms := int64(w * 100); ms < int64(w+1)*100; ms += 1 + rng.Int64N(15) {
				v := reqVals{endMs: 1_700_000_000_000 + ms, latency: float64(rng.IntN(4)) / 8, outputTokens: int32(rng.IntN(9)), success: rng.IntN(3) > 0}
				if rng.IntN(200) == 0 {
					v.latency = math.NaN()
				}
				reqs = append(reqs, v)
			}
			windows[w] = append(windows[w], seriesValues{int32(id), reqs})
		}
		rng.Shuffle(len(windows[w]), func(i, j int) { windows[w][i], windows[w][j] = windows[w][j], windows[w][i] })
	}
	return metrics, windows
}

// inLabelOrder lists the windows' requests series by series in label
// order, each series' in time order, as the loader once filled them.
func inLabelOrder(metrics []model.Metric, windows [][]seriesValues) []Request {
	byLabels := make([]int32, len(metrics))
	slots := make([]string, len(metrics))
	for i := range metrics {
		byLabels[i], slots[i] = int32(i), string(metrics[i]["slot"])
	}
	sortByLabels(byLabels, func(i int32) model.Metric { return metrics[i] })
	ranks := SlotRanks(slots)
	var out []Request
	for _, id := range byLabels {
		for _, parts := range windows {
			for _, p := range parts {
				if p.id != id {
					continue
				}
				for j := range p.reqs {
					var r Request
					fillRequest(&r, &p.reqs[j], metrics[id]["phase"] == "formal", ranks[slots[id]])
					out = append(out, r)
				}
			}
		}
	}
	return out
}

// sortRequestsByCompletion sorts reqs stably by cmpFormalReqs' order
// (end, send, slot, then place in reqs), as the loader once did.
func sortRequestsByCompletion(reqs []Request) {
	idx := make([]int32, len(reqs))
	for i := range idx {
		idx[i] = int32(i)
	}
	slices.SortStableFunc(idx, func(i, j int32) int { return cmpFormalReqs(reqs, i, j) })
	sorted := make([]Request, len(reqs))
	for k, i := range idx {
		sorted[k] = reqs[i]
	}
	copy(reqs, sorted)
}

// TestEndCuts: the cuts are increasing ends where a piece starts, at
// most pieces−1 of them and none for fewer than two pieces of minLen;
// requests that end together (in one series or several) are never
// split, a run of equal ends swallowing the cut that would split it.
func TestEndCuts(t *testing.T) {
	parts := func(series ...[]int64) []seriesValues {
		var out []seriesValues
		for i, ends := range series {
			p := seriesValues{id: int32(i)}
			for _, e := range ends {
				p.reqs = append(p.reqs, reqVals{endMs: e})
			}
			out = append(out, p)
		}
		return out
	}
	for _, tc := range []struct {
		name          string
		parts         []seriesValues
		pieces, minLn int
		want          []int64 // the ends where pieces 2… start
	}{
		{"empty", nil, 4, 1, nil},
		{"fewer than two pieces' worth", parts([]int64{1, 2, 3}), 2, 2, nil},
		{"even cuts", parts([]int64{1, 2, 3, 4, 5, 6}), 3, 2, []int64{3, 5}},
		{"equal ends of two series kept together", parts([]int64{1, 2, 3}, []int64{2, 3, 4}), 2, 1, []int64{3}},
		{"equal ends swallow a cut", parts([]int64{1, 1, 1, 1, 1, 2}), 3, 1, nil},
		{"all equal", parts([]int64{7}, []int64{7}, []int64{7}, []int64{7}), 4, 1, nil},
		{"negative times", parts([]int64{-3, -2, -1, 0}), 2, 1, []int64{-1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := 0
			for _, p := range tc.parts {
				n += len(p.reqs)
			}
			var want []uint64
			for _, e := range tc.want {
				want = append(want, endKey(e))
			}
			if got := endCuts(tc.parts, n, tc.pieces, tc.minLn); !slices.Equal(got, want) {
				t.Errorf("endCuts(%d requests, %d, %d) = %v, want %v", n, tc.pieces, tc.minLn, got, want)
			}
		})
	}
}

// TestEndCutsBalance: many series of a few requests each, their ends
// interleaved (the 1M benchmark's shape: 763 series of 1,311), are cut
// into pieces of about equal size, not at the series' first ends.
func TestEndCutsBalance(t *testing.T) {
	const series, each, pieces = 763, 1311, 4
	parts := make([]seriesValues, series)
	for i := range parts {
		for k := range each {
			parts[i].reqs = append(parts[i].reqs, reqVals{endMs: int64(k*series + i)})
		}
	}
	cuts := endCuts(parts, series*each, pieces, 1)
	if len(cuts) != pieces-1 {
		t.Fatalf("%d cuts, want %d", len(cuts), pieces-1)
	}
	for k, c := range cuts {
		below := 0
		for _, p := range parts {
			below += sort.Search(len(p.reqs), func(j int) bool { return endKey(p.reqs[j].endMs) >= c })
		}
		if want := series * each * (k + 1) / pieces; math.Abs(float64(below-want)) > 0.02*series*each {
			t.Errorf("cut %d has %d requests before it, want about %d", k, below, want)
		}
	}
}
