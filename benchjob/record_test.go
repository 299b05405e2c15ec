package benchjob

import (
	"encoding/json"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/joulemark/joulemark/benchjob/openai"
	"github.com/joulemark/joulemark/internal/remotewrite"
	"github.com/joulemark/joulemark/internal/runarchive"
)

// TestSampleTimestampsSurviveTheArchive: a request's samples have the same
// timestamps whether made from the live record or from its requests.jsonl
// line (what runs push reads), on instants at and around millisecond
// boundaries, where the float64 end_time rounds across the boundary: there
// time.UnixMilli (what the live samples used before) and the archived
// float disagree by 1 ms, which would make a re-sent sample a second
// sample instead of a duplicate. The timestamp stays within 1 ms of the
// instant, and never decreases as the instant grows (the slot reuse rule).
func TestSampleTimestampsSurviveTheArchive(t *testing.T) {
	base := time.Date(2026, 11, 30, 14, 0, 0, 0, time.UTC).UnixNano()
	var instants []time.Time
	for _, b := range []int64{base, base + 86400e9*365*10} { // now and ten years on
		for ms := int64(0); ms < 200; ms++ {
			for _, off := range []int64{-200, -150, -100, -50, -1, 0, 1, 50, 100, 150, 200} {
				instants = append(instants, time.Unix(0, b+ms*1e6+off))
			}
		}
	}
	disagreed := 0
	last := int64(math.MinInt64)
	for _, end := range instants {
		resp := &openai.Response{Send: end.Add(-time.Second), FirstToken: end.Add(-900 * time.Millisecond), End: end,
			UsageReported: true, PromptTokens: 10, CompletionTokens: 5}
		live := newRecord("formal", 0, Prompt{}, resp, time.Time{})
		b, err := json.Marshal(live)
		if err != nil {
			t.Fatal(err)
		}
		var archived runarchive.Request
		if err := json.Unmarshal(b, &archived); err != nil {
			t.Fatal(err)
		}
		ls, as := requestSamples(live, "r"), requestSamples(&archived, "r")
		if len(ls) != 5 || !slices.EqualFunc(ls, as, func(a, b remotewrite.Sample) bool {
			return a.TimestampMs == b.TimestampMs && a.Value == b.Value
		}) {
			t.Fatalf("end %d: live samples %v, archived %v", end.UnixNano(), ls, as)
		}
		ts := ls[0].TimestampMs
		if d := ts - end.UnixMilli(); d < -1 || d > 1 {
			t.Errorf("end %d: sample at %d ms, %d ms from the instant", end.UnixNano(), ts, d)
		}
		if ts != end.UnixMilli() {
			disagreed++
		}
		if ts < last {
			t.Errorf("end %d: sample at %d ms, before the previous instant's %d", end.UnixNano(), ts, last)
		}
		last = ts
		if got := sampleMs(unixSeconds(end)); got != ts {
			t.Errorf("end %d: slot release at %d ms, sample at %d", end.UnixNano(), got, ts)
		}
	}
	// The edge values do exercise the rounding: some instants' UnixMilli
	// differs from the archived float's millisecond.
	if disagreed == 0 {
		t.Errorf("none of %d instants rounds across a millisecond: the test exercises nothing", len(instants))
	}
	t.Logf("%d of %d instants: UnixMilli differs from the archived end_time's millisecond", disagreed, len(instants))
}
