package runarchive

import (
	"strconv"

	"github.com/joulemark/joulemark/internal/jsonappend"
)

// appendRequest appends r's requests.jsonl line, byte for byte what
// encoding/json's Encoder writes (HTML-escaped, a newline at the end),
// without reflection. It reports false for a float that is NaN or
// infinite: the caller then has encoding/json refuse the line.
func appendRequest(b []byte, r *Request) ([]byte, bool) {
	e := lineEncoder{b: b, ok: true}
	e.str(`{"phase":`, r.Phase)
	e.int(`,"slot":`, r.Slot)
	e.float(`,"send_time":`, r.SendTime)
	e.floatPtr(`,"first_token_time":`, r.FirstTokenTime)
	e.float(`,"end_time":`, r.EndTime)
	e.floatPtr(`,"ttft_seconds":`, r.TTFTSeconds)
	e.float(`,"latency_seconds":`, r.LatencySeconds)
	e.floatPtr(`,"tpot_seconds":`, r.TPOTSeconds)
	e.int(`,"output_tokens":`, r.OutputTokens)
	e.int(`,"input_tokens":`, r.InputTokens)
	e.str(`,"tokens_source":`, r.TokensSource)
	e.bool(`,"success":`, r.Success)
	e.str(`,"error":`, r.Error)
	e.str(`,"finish_reason":`, r.FinishReason)
	e.floats(`,"itl_seconds":`, r.ITLSeconds)
	e.int(`,"index":`, r.Index)
	e.str(`,"error_class":`, r.ErrorClass)
	if r.StatusCode != 0 {
		e.int(`,"status_code":`, r.StatusCode)
	}
	e.str(`,"model":`, r.Model)
	if r.ScheduledTime != nil {
		e.float(`,"scheduled_time":`, *r.ScheduledTime)
	}
	e.int(`,"chunks":`, r.Chunks)
	e.int(`,"reasoning_tokens":`, r.ReasoningTokens)
	if r.OutputChars == nil {
		e.b = append(e.b, `,"output_chars":null`...)
	} else {
		e.int(`,"output_chars":`, *r.OutputChars)
	}
	e.int(`,"reasoning_chars":`, r.ReasoningChars)
	e.str(`,"output_hash":`, r.OutputHash)
	e.int(`,"max_tokens":`, r.MaxTokens)
	if r.RetryAfterSeconds != 0 {
		e.float(`,"retry_after_seconds":`, r.RetryAfterSeconds)
	}
	if q := r.Quality; q != nil {
		e.bool(`,"quality":{"pass":`, q.Pass)
		if len(q.Failed) > 0 {
			e.b = append(e.b, `,"failed_rules":[`...)
			for i, s := range q.Failed {
				e.str(","[:min(i, 1)], s)
			}
			e.b = append(e.b, ']')
		}
		if q.Mismatches != 0 {
			e.int(`,"mismatches":`, q.Mismatches)
		}
		e.b = append(e.b, '}')
	}
	e.b = append(e.b, "}\n"...)
	return e.b, e.ok
}

// lineEncoder appends JSON values, each after its key; ok turns false at
// the first value it cannot write as encoding/json would.
type lineEncoder struct {
	b  []byte
	ok bool
}

func (e *lineEncoder) int(key string, v int) {
	e.b = strconv.AppendInt(append(e.b, key...), int64(v), 10)
}

func (e *lineEncoder) bool(key string, v bool) {
	e.b = strconv.AppendBool(append(e.b, key...), v)
}

func (e *lineEncoder) str(key, s string) {
	e.b = jsonappend.String(append(e.b, key...), s)
}

func (e *lineEncoder) floatPtr(key string, v *float64) {
	if v == nil {
		e.b = append(append(e.b, key...), "null"...)
		return
	}
	e.float(key, *v)
}

func (e *lineEncoder) floats(key string, vs []float64) {
	if vs == nil {
		e.b = append(append(e.b, key...), "null"...)
		return
	}
	e.b = append(append(e.b, key...), '[')
	for i, v := range vs {
		e.float(","[:min(i, 1)], v)
	}
	e.b = append(e.b, ']')
}

// float writes v as encoding/json does; a NaN or an infinity, which
// encoding/json refuses, leaves ok false.
func (e *lineEncoder) float(key string, v float64) {
	var ok bool
	if e.b, ok = jsonappend.Float(append(e.b, key...), v); !ok {
		e.ok = false
	}
}
