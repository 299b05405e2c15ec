package benchjob

import (
	"math"
	"strconv"
	"time"

	"github.com/joulemark/joulemark/benchjob/openai"
	"github.com/joulemark/joulemark/internal/contract"
	"github.com/joulemark/joulemark/internal/remotewrite"
	"github.com/joulemark/joulemark/internal/runarchive"
)

func unixSeconds(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }

// sampleMs is the remote-write timestamp (ms) of an instant as the archive
// holds it, unix seconds in a float64. The bench's live samples and
// `joulemark runs push` both take their timestamps from it, computed from
// the same float (which survives the JSON round trip exactly), so a
// re-sent sample lands on the very millisecond of the original one and
// Prometheus takes it as a duplicate, not as a second sample. Computed
// from the time.Time instead (UnixMilli), the two could differ by 1 ms
// where the float's rounding crosses a millisecond. sampleMs of
// unixSeconds is non-decreasing in time (each step is), which the slot
// reuse rule (slots) relies on.
func sampleMs(sec float64) int64 { return int64(math.Floor(sec * 1000)) }

// recordValues holds a record and what its pointer fields point to: one
// allocation instead of one each.
type recordValues struct {
	r                                 runarchive.Request
	firstToken, scheduled, ttft, tpot float64
	outputChars                       int
}

// newRecord turns a response into an archive record.
func newRecord(phase string, slot int, p Prompt, resp *openai.Response, scheduled time.Time) *runarchive.Request {
	v := &recordValues{outputChars: resp.TextChars}
	r := &v.r
	*r = runarchive.Request{
		Phase: phase, Slot: slot, Index: p.Index, MaxTokens: p.MaxTokens,
		SendTime:        unixSeconds(resp.Send),
		EndTime:         unixSeconds(resp.End),
		LatencySeconds:  resp.End.Sub(resp.Send).Seconds(),
		FinishReason:    resp.FinishReason,
		Model:           resp.Model,
		Chunks:          resp.Chunks,
		StatusCode:      resp.StatusCode,
		ReasoningTokens: resp.ReasoningTokens,
		OutputChars:     &v.outputChars,
		ReasoningChars:  resp.ReasoningChars,
		OutputHash:      resp.TextSHA256,
		ITLSeconds:      make([]float64, len(resp.ITL)),
		Success:         resp.Err == nil,
	}
	r.RetryAfterSeconds = resp.RetryAfter.Seconds()
	if !scheduled.IsZero() {
		v.scheduled = unixSeconds(scheduled)
		r.ScheduledTime = &v.scheduled
	}
	for i, d := range resp.ITL {
		r.ITLSeconds[i] = d.Seconds()
	}
	if resp.UsageReported {
		r.TokensSource = runarchive.TokensUsage
		r.InputTokens = resp.PromptTokens
		r.OutputTokens = resp.CompletionTokens
	} else {
		r.TokensSource = runarchive.TokensChunks
		r.InputTokens = p.InputTokens
		if p.InputTokens == 0 {
			r.InputTokens = estimateTokens(p.Text)
		}
		r.OutputTokens = resp.Chunks
	}
	if !resp.FirstToken.IsZero() {
		v.firstToken = unixSeconds(resp.FirstToken)
		r.FirstTokenTime = &v.firstToken
	}
	if resp.Err != nil {
		r.Error = resp.Err.Error()
		r.ErrorClass = string(openai.ClassOf(resp.Err))
		if r.ErrorClass == "" {
			r.ErrorClass = "error"
		}
		r.OutputTokens = 0
		return r
	}
	if !resp.FirstToken.IsZero() {
		v.ttft = resp.FirstToken.Sub(resp.Send).Seconds()
		r.TTFTSeconds = &v.ttft
		if r.OutputTokens > 1 {
			v.tpot = (r.LatencySeconds - v.ttft) / float64(r.OutputTokens-1)
			r.TPOTSeconds = &v.tpot
		}
	}
	return r
}

// requestSamples returns the per-request samples of r: one per contract
// metric, all at the request's end time (sampleMs of end_time), labelled
// run_id, phase and slot; no TTFT sample for a failed request.
func requestSamples(r *runarchive.Request, runID string) []remotewrite.Sample {
	ts := sampleMs(r.EndTime)
	slot := strconv.Itoa(r.Slot)
	lbl := func(name string) map[string]string {
		return map[string]string{"__name__": name, "run_id": runID, "phase": r.Phase, "slot": slot}
	}
	succ := 0.0
	if r.Success {
		succ = 1
	}
	out := make([]remotewrite.Sample, 0, 5)
	out = append(out,
		remotewrite.Sample{Labels: lbl(contract.RequestOutputTokens), Value: float64(r.OutputTokens), TimestampMs: ts},
		remotewrite.Sample{Labels: lbl(contract.RequestInputTokens), Value: float64(r.InputTokens), TimestampMs: ts},
	)
	if r.Success && r.TTFTSeconds != nil {
		out = append(out, remotewrite.Sample{Labels: lbl(contract.RequestTTFT), Value: *r.TTFTSeconds, TimestampMs: ts})
	}
	out = append(out,
		remotewrite.Sample{Labels: lbl(contract.RequestLatency), Value: r.LatencySeconds, TimestampMs: ts},
		remotewrite.Sample{Labels: lbl(contract.RequestSuccess), Value: succ, TimestampMs: ts},
	)
	return out
}
