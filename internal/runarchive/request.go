package runarchive

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
)

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
	// OutputChars is the answer's length in characters; nil in archives
	// written before it was recorded.
	OutputChars    *int   `json:"output_chars"`
	ReasoningChars int    `json:"reasoning_chars"`
	OutputHash     string `json:"output_hash"`
	MaxTokens      int    `json:"max_tokens"`
	// RetryAfterSeconds is the wait a 429 or 503 answer asked for
	// (Retry-After, at most openai.MaxRetryAfter); the load paused for it.
	RetryAfterSeconds float64 `json:"retry_after_seconds,omitempty"`
	// Quality is the answer checked against its rubric (correctness
	// workload, workload.quality_file); absent when not checked or failed.
	Quality *QualityResult `json:"quality,omitempty"`
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

// EmptyOutput reports whether the answer was empty: no output token, or
// no answer text (a reasoning-only answer). Unknown counts say nothing.
func (r *Request) EmptyOutput() bool {
	return r.OutputTokens == 0 || r.OutputChars != nil && *r.OutputChars == 0
}

// MaxRequestLine is the longest requests.jsonl line read (64 MiB).
const MaxRequestLine = 64 << 20

// DecodeRequests reads requests.jsonl lines from rd and calls fn with each
// record and its line number (from 1), in order; name is the file named in
// errors. A blank line is skipped; a line that is not one JSON object of
// the Request schema (a line cut short included) is an error naming name
// and the line. fn's error stops the reading and is returned as it is.
func DecodeRequests(rd io.Reader, name string, fn func(line int, r *Request) error) error {
	sc := bufio.NewScanner(rd)
	sc.Buffer(make([]byte, 0, 64<<10), MaxRequestLine)
	line := 0
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		if b[0] != '{' {
			return fmt.Errorf("%s: line %d: not a JSON object", name, line)
		}
		r := new(Request)
		if err := json.Unmarshal(b, r); err != nil {
			return fmt.Errorf("%s: line %d: %w", name, line, err)
		}
		if err := fn(line, r); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%s: line %d: %w", name, line+1, err)
	}
	return nil
}

// EachRequest streams the run's complete requests.jsonl through fn
// (DecodeRequests); a run holding only requests.jsonl.partial is refused
// as incomplete (CheckRequests).
func (r *Run) EachRequest(fn func(line int, req *Request) error) error {
	f, err := r.openRequests()
	if err != nil {
		return err
	}
	defer f.Close()
	if err := DecodeRequests(f, f.Name(), fn); err != nil {
		return fmt.Errorf("run archive: %w", err)
	}
	return nil
}
