package runarchive

import "github.com/joulemark/joulemark/analyze/quality"

// Request is one line of runs/<run_id>/requests.jsonl. The first keys are
// the design's run-archive contract; the rest (after ITLSeconds) add what
// the experiments count (empty and repeated outputs) and where a request
// failed.
type Request struct {
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

// Token sources (Request.TokensSource).
const (
	// TokensUsage: both counts are the API-reported usage.
	TokensUsage = "usage"
	// TokensChunks: the stream had no usage; output tokens are the
	// token-bearing chunks and input tokens the prompt estimate
	// (4 characters per token).
	TokensChunks = "stream_chunks"
)

// Outcome is the joulemark_bench_requests_total outcome label: "success"
// or the error class.
func (r *Request) Outcome() string {
	if r.Success {
		return "success"
	}
	return r.ErrorClass
}
