package openai

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/joulemark/joulemark/internal/contract"
)

// MaxUsageTokens bounds any token count of a usage block
// (contract.MaxRequestTokens): a larger count is invalid_usage.
const MaxUsageTokens = contract.MaxRequestTokens

// UsageSlack is how many completion tokens a usage block may report
// beyond the request's max_tokens before it is invalid_usage
// (contract.UsageSlack).
func UsageSlack(maxTokens int) int { return contract.UsageSlack(maxTokens) }

// UsageError is a usage block that cannot be true: a count that is not a
// non-negative integer, above MaxUsageTokens or, for completion_tokens,
// above the request's max_tokens plus UsageSlack.
type UsageError struct {
	Field string // completion_tokens, prompt_tokens, reasoning_tokens
	Value string // as the engine sent it, or why it is wrong
}

func (e *UsageError) Error() string {
	return fmt.Sprintf("usage %s %s: want an integer from 0 to %d", e.Field, e.Value, MaxUsageTokens)
}

// checkAnswer judges a stream that ended complete: a usage block that
// contradicts the request (contract.ClassInvalidUsage), or an answer with neither
// content nor tokens (contract.ClassEmptyResponse). Nil when the answer stands.
func checkAnswer(resp *Response, maxTokens, promptBytes int) *Error {
	if resp.UsageReported {
		if e := checkUsageAgainstStream(resp, promptBytes); e != nil {
			return e
		}
		if maxTokens > 0 && resp.CompletionTokens > maxTokens+UsageSlack(maxTokens) {
			return &Error{Class: contract.ClassInvalidUsage, Msg: fmt.Sprintf("usage completion_tokens %d for max_tokens %d (at most %d taken)",
				resp.CompletionTokens, maxTokens, maxTokens+UsageSlack(maxTokens))}
		}
		if resp.ReasoningTokens > resp.CompletionTokens {
			return &Error{Class: contract.ClassInvalidUsage, Msg: fmt.Sprintf("usage reasoning_tokens %d above completion_tokens %d",
				resp.ReasoningTokens, resp.CompletionTokens)}
		}
	}
	if resp.Chunks == 0 && (!resp.UsageReported || resp.CompletionTokens == 0) {
		return &Error{Class: contract.ClassEmptyResponse, Msg: "the stream ended with neither content nor tokens"}
	}
	return nil
}

// PromptTemplateSlack is how many prompt tokens a usage block may report
// beyond the prompt's length in bytes (a token holds at least one byte of
// text; the chat template and special tokens add the rest).
const PromptTemplateSlack = 4096

// checkUsageAgainstStream judges a usage block against what was sent and
// streamed: more prompt tokens than the prompt's bytes plus
// PromptTemplateSlack, or no completion token for an answer that streamed
// content, is invalid usage.
func checkUsageAgainstStream(resp *Response, promptBytes int) *Error {
	if resp.PromptTokens > promptBytes+PromptTemplateSlack {
		return &Error{Class: contract.ClassInvalidUsage, Msg: fmt.Sprintf("usage prompt_tokens %d for a prompt of %d bytes (at most %d taken)",
			resp.PromptTokens, promptBytes, promptBytes+PromptTemplateSlack)}
	}
	if resp.CompletionTokens == 0 && resp.Chunks > 0 {
		return &Error{Class: contract.ClassInvalidUsage, Msg: fmt.Sprintf("usage completion_tokens 0 for %d streamed content chunks", resp.Chunks)}
	}
	return nil
}

// MaxRetryAfter bounds the wait a Retry-After header can ask for: a
// longer one (or a date further away) is taken as MaxRetryAfter.
const MaxRetryAfter = time.Minute

// retryAfter parses a Retry-After value, delay-seconds or an HTTP date,
// against now (RFC 9110, 10.2.3): 0 when absent, invalid or past, at
// most MaxRetryAfter.
func retryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	var d time.Duration
	if n, err := strconv.ParseUint(v, 10, 64); err == nil {
		d = MaxRetryAfter
		if n < uint64(MaxRetryAfter/time.Second) {
			d = time.Duration(n) * time.Second
		}
	} else if t, err := http.ParseTime(v); err == nil {
		d = t.Sub(now)
	}
	return min(max(d, 0), MaxRetryAfter)
}
