package openai

import (
	"encoding/json"
	"errors"
	"math"
	"strconv"
)

// chunkView is what one streamed object holds that the client uses. Byte
// slices are valid until the next decode.
type chunkView struct {
	model     []byte
	text      []byte // content of every choice, unescaped
	reasoning int    // bytes of reasoning content (reasoning_content or reasoning)
	finish    []byte
	usage     bool
	prompt    int
	complete  int
	reasonTok int
	err       bool
	errMsg    string
}

// decoder decodes chunks in one pass and without allocating: a scanner
// (scan.go) checks the chunk as encoding/json would and notes where the
// few values the client needs are, which are then read in place: model,
// each choice's text, delta content, reasoning and finish reason, the
// usage counts and an error. Nothing else of the chunk is decoded.
type decoder struct {
	v       chunkView
	scratch []byte // reasoning content, unescaped to be counted
}

var errNotObject = errors.New("chunk is not a JSON object")

// The keys read, by level.
var (
	topKeys    = []string{"model", "choices", "usage", "error"}
	choiceKeys = []string{"text", "delta", "finish_reason"}
	deltaKeys  = []string{"content", "reasoning_content", "reasoning"}
	usageKeys  = []string{"prompt_tokens", "completion_tokens", "completion_tokens_details"}
	detailKeys = []string{"reasoning_tokens"}
	errorKeys  = []string{"message"}
)

func (d *decoder) decode(data []byte) (*chunkView, error) {
	v := &d.v
	*v = chunkView{text: v.text[:0], finish: v.finish[:0], model: v.model[:0]}
	i := skipSpace(data, 0)
	var top [4]span
	var end int
	if i < len(data) && data[i] == '{' {
		end = object(data, i, 1, topKeys, top[:])
	} else {
		end = value(data, i, 0)
	}
	if end < 0 || skipSpace(data, end) != len(data) {
		return nil, invalidJSON(data)
	}
	if data[i] != '{' {
		return nil, errNotObject
	}
	if s := top[0]; s.end > 0 && data[s.start] == '"' {
		v.model = unquote(v.model, data[s.start+1:s.end-1])
	}
	if s := top[1]; s.end > 0 && data[s.start] == '[' {
		array(data, s.start, 1, func(c span) {
			if data[c.start] == '{' {
				d.choice(data, c)
			}
		})
	}
	if s := top[2]; s.end > 0 && data[s.start] == '{' {
		v.usage = true
		if err := d.usage(data, s); err != nil {
			return nil, err
		}
	}
	if s := top[3]; s.end > 0 {
		switch data[s.start] {
		case '{':
			v.err = true
			var m [1]span
			object(data, s.start, 1, errorKeys, m[:])
			if q := m[0]; q.end > 0 && data[q.start] == '"' {
				v.errMsg = string(unquote(nil, data[q.start+1:q.end-1]))
			} else {
				v.errMsg = string(data[s.start:s.end])
			}
		case '"':
			v.err = true
			v.errMsg = string(unquote(nil, data[s.start+1:s.end-1]))
		}
	}
	return v, nil
}

// choice reads one element of choices: text (completions), delta.content
// (chat), reasoning content and the finish reason.
func (d *decoder) choice(data []byte, c span) {
	v := &d.v
	var f [3]span
	object(data, c.start, 1, choiceKeys, f[:])
	v.text = appendStr(v.text, data, f[0])
	if s := f[1]; s.end > 0 && data[s.start] == '{' {
		var g [3]span
		object(data, s.start, 1, deltaKeys, g[:])
		v.text = appendStr(v.text, data, g[0])
		for _, r := range g[1:] {
			if r.end > 0 && data[r.start] == '"' {
				d.scratch = unquote(d.scratch[:0], data[r.start+1:r.end-1])
				v.reasoning += len(d.scratch)
			}
		}
	}
	if s := f[2]; s.end > s.start+2 && data[s.start] == '"' {
		v.finish = unquote(v.finish[:0], data[s.start+1:s.end-1])
	}
}

// appendStr appends the string at s (nothing when s is absent or not a
// string).
func appendStr(dst, data []byte, s span) []byte {
	if s.end == 0 || data[s.start] != '"' {
		return dst
	}
	return unquote(dst, data[s.start+1:s.end-1])
}

// usage reads the server's token counts. A count that is not a
// non-negative integer of at most MaxUsageTokens (a string such as "NaN",
// a fraction, a negative or absurd number), or a usage without
// completion_tokens, is a *UsageError: the engine's usage is not trusted.
func (d *decoder) usage(data []byte, u span) error {
	var f [3]span
	object(data, u.start, 1, usageKeys, f[:])
	if c := f[1]; c.end == 0 || data[c.start] == 'n' {
		return &UsageError{Field: "completion_tokens", Value: "absent"}
	}
	var r span
	if s := f[2]; s.end > 0 && data[s.start] == '{' {
		var g [1]span
		object(data, s.start, 1, detailKeys, g[:])
		r = g[0]
	}
	var err error
	d.v.prompt, err = count(data, f[0], "prompt_tokens", err)
	d.v.complete, err = count(data, f[1], "completion_tokens", err)
	d.v.reasonTok, err = count(data, r, "reasoning_tokens", err)
	return err
}

// count is the count at s as an int (0 when absent or null); the first
// error sticks.
func count(data []byte, s span, name string, err error) (int, error) {
	if s.end == 0 || data[s.start] == 'n' {
		return 0, err
	}
	x, ok := usageCount(data[s.start:s.end])
	if !ok && err == nil {
		err = &UsageError{Field: name, Value: truncate(data[s.start:s.end], 64)}
	}
	return x, err
}

// usageCount is the JSON value n as a token count: a number whose value is
// an integer in [0, MaxUsageTokens] (1e3 and 3.0 are taken, 3.5 is not).
func usageCount(n []byte) (int, bool) {
	if c := n[0]; c != '-' && (c < '0' || c > '9') {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(n), 64)
	if err != nil || f < 0 || f > MaxUsageTokens || f != math.Trunc(f) {
		return 0, false
	}
	return int(f), true
}

// invalidJSON is encoding/json's own message, with the offset, for a
// chunk the scanner refused.
func invalidJSON(data []byte) error {
	var x any
	if err := json.Unmarshal(data, &x); err != nil {
		return err
	}
	return errors.New("invalid JSON")
}
