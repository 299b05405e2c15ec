package benchjob

import (
	"math"
	"strconv"
	"time"

	"github.com/joulemark/joulemark/analyze/quality"
	"github.com/joulemark/joulemark/benchjob/openai"
	"github.com/joulemark/joulemark/internal/contract"
	"github.com/joulemark/joulemark/internal/remotewrite"
)

// Record is one line of runs/<run_id>/requests.jsonl. The first keys are
// the design's run-archive contract; the rest (after ITLSeconds) add what
// the experiments count (empty and repeated outputs) and where a request
// failed.
type Record struct {
	Phase          string    `json:"phase"`
	Slot           int       `json:"slot"`
	SendTime       float64   `json:"send_time"`
	FirstTokenTime *float64  `json:"first_token_time"`
	EndTime        float64   `json:"end_time"`
	TTFTSeconds    *float64  `json:"ttft_seconds"`
	LatencySeconds float64   `json:"latency_seconds"`
	TPOTSeconds    *float64  `json:"tpot_seconds"`
	OutputTokens   int       `json:"output_tokens"`
	InputTokens    int       `json:"input_tokens"`
	TokensSource   string    `json:"tokens_source"`
	Success        bool      `json:"success"`
	Error          string    `json:"error"`
	FinishReason   string    `json:"finish_reason"`
	ITLSeconds     []float64 `json:"itl_seconds"`

	Index           int      `json:"index"`
	ErrorClass      string   `json:"error_class"`
	StatusCode      int      `json:"status_code,omitempty"`
	Model           string   `json:"model"`
	ScheduledTime   *float64 `json:"scheduled_time,omitempty"`
	Chunks          int      `json:"chunks"`
	ReasoningTokens int      `json:"reasoning_tokens"`
	OutputChars     int      `json:"output_chars"`
	ReasoningChars  int      `json:"reasoning_chars"`
	OutputHash      string   `json:"output_hash"`
	MaxTokens       int      `json:"max_tokens"`
	// RetryAfterSeconds is the wait a 429 or 503 answer asked for
	// (Retry-After, at most openai.MaxRetryAfter); the load paused for it.
	RetryAfterSeconds float64 `json:"retry_after_seconds,omitempty"`
	// Quality is the answer checked against its rubric (correctness
	// workload, workload.quality_file); absent when not checked or failed.
	Quality *quality.Result `json:"quality,omitempty"`
}

// Token sources (Record.TokensSource).
const (
	// TokensUsage: both counts are the API-reported usage.
	TokensUsage = "usage"
	// TokensChunks: the stream had no usage; output tokens are the
	// token-bearing chunks and input tokens the prompt estimate
	// (4 characters per token).
	TokensChunks = "stream_chunks"
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

// newRecord turns a response into an archive record.
func newRecord(phase string, slot int, p Prompt, resp *openai.Response, scheduled time.Time) *Record {
	r := &Record{
		Phase: phase, Slot: slot, Index: p.Index, MaxTokens: p.MaxTokens,
		SendTime:        unixSeconds(resp.Send),
		EndTime:         unixSeconds(resp.End),
		LatencySeconds:  resp.End.Sub(resp.Send).Seconds(),
		FinishReason:    resp.FinishReason,
		Model:           resp.Model,
		Chunks:          resp.Chunks,
		StatusCode:      resp.StatusCode,
		ReasoningTokens: resp.ReasoningTokens,
		OutputChars:     resp.TextChars,
		ReasoningChars:  resp.ReasoningChars,
		OutputHash:      resp.TextSHA256,
		ITLSeconds:      make([]float64, len(resp.ITL)),
		Success:         resp.Err == nil,
	}
	r.RetryAfterSeconds = resp.RetryAfter.Seconds()
	if !scheduled.IsZero() {
		r.ScheduledTime = new(unixSeconds(scheduled))
	}
	for i, d := range resp.ITL {
		r.ITLSeconds[i] = d.Seconds()
	}
	if resp.UsageReported {
		r.TokensSource = TokensUsage
		r.InputTokens = resp.PromptTokens
		r.OutputTokens = resp.CompletionTokens
	} else {
		r.TokensSource = TokensChunks
		r.InputTokens = p.InputTokens
		if p.InputTokens == 0 {
			r.InputTokens = estimateTokens(p.Text)
		}
		r.OutputTokens = resp.Chunks
	}
	if !resp.FirstToken.IsZero() {
		r.FirstTokenTime = new(unixSeconds(resp.FirstToken))
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
		ttft := resp.FirstToken.Sub(resp.Send).Seconds()
		r.TTFTSeconds = &ttft
		if r.OutputTokens > 1 {
			r.TPOTSeconds = new((r.LatencySeconds - ttft) / float64(r.OutputTokens-1))
		}
	}
	return r
}

// Outcome is the joulemark_bench_requests_total outcome label: "success"
// or the error class.
func (r *Record) Outcome() string {
	if r.Success {
		return "success"
	}
	return r.ErrorClass
}

// Samples returns the per-request samples of r: one per contract metric,
// all at the request's end time (sampleMs of end_time), labelled run_id,
// phase and slot; no TTFT sample for a failed request.
func (r *Record) Samples(runID string) []remotewrite.Sample {
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
