package openai

import (
	"bytes"
	"encoding/json"
	"io"
	"math"
	"strconv"
	"testing"
	"unicode/utf8"
)

// refChunk decodes a chunk with encoding/json: the reference the fast
// decoder must agree with.
func refChunk(data []byte) (chunkView, bool) {
	var v chunkView
	if !json.Valid(data) {
		return v, false
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var x any
	if dec.Decode(&x) != nil {
		return v, false
	}
	m, ok := x.(map[string]any)
	if !ok {
		return v, false
	}
	if s, ok := m["model"].(string); ok {
		v.model = []byte(s)
	}
	if cs, ok := m["choices"].([]any); ok {
		for _, c := range cs {
			c, ok := c.(map[string]any)
			if !ok {
				continue
			}
			if s, ok := c["text"].(string); ok {
				v.text = append(v.text, s...)
			}
			if d, ok := c["delta"].(map[string]any); ok {
				if s, ok := d["content"].(string); ok {
					v.text = append(v.text, s...)
				}
				for _, k := range []string{"reasoning_content", "reasoning"} {
					if s, ok := d[k].(string); ok {
						v.reasoning += len(s)
					}
				}
			}
			if s, ok := c["finish_reason"].(string); ok && s != "" {
				v.finish = []byte(s)
			}
		}
	}
	if u, ok := m["usage"].(map[string]any); ok {
		v.usage = true
		// A count: absent or null is 0; else an integral number in
		// [0, MaxUsageTokens]; anything else makes the chunk invalid.
		num := func(x any) (int, bool) {
			if x == nil {
				return 0, true
			}
			n, ok := x.(json.Number)
			if !ok {
				return 0, false
			}
			f, err := strconv.ParseFloat(string(n), 64)
			if err != nil || f < 0 || f > MaxUsageTokens || f != math.Trunc(f) {
				return 0, false
			}
			return int(f), true
		}
		var ok1, ok2, ok3 bool
		v.prompt, ok1 = num(u["prompt_tokens"])
		v.complete, ok2 = num(u["completion_tokens"])
		ok3 = true
		if d, ok := u["completion_tokens_details"].(map[string]any); ok {
			v.reasonTok, ok3 = num(d["reasoning_tokens"])
		}
		if !ok1 || !ok2 || !ok3 || u["completion_tokens"] == nil {
			return v, false
		}
	}
	switch e := m["error"].(type) {
	case map[string]any:
		v.err = true
		if s, ok := e["message"].(string); ok {
			v.errMsg = s
		}
	case string:
		v.err, v.errMsg = true, e
	}
	return v, true
}

// dupKeys reports whether some object in data repeats a key (encoding/json
// keeps the last, as the scanner does; repeated keys are outside the
// contract).
func dupKeys(data []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(data))
	type frame struct {
		obj  bool
		key  bool // next string token is a key
		seen map[string]bool
	}
	var st []*frame
	for {
		t, err := dec.Token()
		if err == io.EOF || err != nil {
			return false
		}
		var top *frame
		if len(st) > 0 {
			top = st[len(st)-1]
		}
		switch t := t.(type) {
		case json.Delim:
			switch t {
			case '{', '[':
				if top != nil && top.obj {
					top.key = true
				}
				st = append(st, &frame{obj: t == '{', key: t == '{', seen: map[string]bool{}})
			default:
				st = st[:len(st)-1]
			}
		default:
			if top == nil || !top.obj {
				continue
			}
			if top.key {
				s, _ := t.(string)
				if top.seen[s] {
					return true
				}
				top.seen[s] = true
				top.key = false
			} else {
				top.key = true
			}
		}
	}
}

// FuzzChunkDecode checks the one-pass decoder against encoding/json: the
// same verdict on validity and the same fields.
func FuzzChunkDecode(f *testing.F) {
	for _, s := range []string{
		`{"id":"cmpl-1","object":"text_completion","created":1,"model":"m","choices":[{"index":0,"text":" tok","logprobs":null,"finish_reason":null}],"usage":null}`,
		`{"model":"m","choices":[{"delta":{"content":"a\"b\\u00e9\n","reasoning_content":"r"},"finish_reason":"stop"}]}`,
		`{"choices":[{"delta":{"reasoning":"thinking"}}, 3, {"text":"x"}],"usage":{"prompt_tokens":3,"completion_tokens":4,"completion_tokens_details":{"reasoning_tokens":2}}}`,
		`{"usage":{"prompt_tokens":1.5}}`,
		`{"usage":{"completion_tokens":99999999999999999999}}`,
		`{"usage":{"completion_tokens":-1000000,"prompt_tokens":-5}}`,
		`{"usage":{"completion_tokens":"NaN"}}`,
		`{"usage":{"completion_tokens":1e3,"prompt_tokens":null}}`,
		`{"usage":{"prompt_tokens":3}}`,
		`{"error":{"message":"boom","code":500}}`,
		`{"error":"plain"}`,
		`{"error":{"code":1}}`,
		"{\"choices\":[{\"text\":\"a\tb\"}]}",
		`{"choices":[{"text":"bad \x escape"}]}`,
		`{"choices": [oops`,
		`[1,2]`,
		`"s"`,
		`{} x`,
		``,
	} {
		f.Add([]byte(s))
	}
	var d decoder
	f.Fuzz(func(t *testing.T, data []byte) {
		want, ok := refChunk(data)
		got, err := d.decode(append([]byte(nil), data...))
		if ok != (err == nil) {
			t.Fatalf("%q: decoder error %v, encoding/json says valid=%v", data, err, ok)
		}
		if !ok || dupKeys(data) || !utf8.Valid(data) {
			// Repeated keys and invalid UTF-8 (which encoding/json
			// replaces, the client hashes as sent) are outside the contract.
			return
		}
		if string(got.model) != string(want.model) || string(got.text) != string(want.text) ||
			got.reasoning != want.reasoning || string(got.finish) != string(want.finish) ||
			got.usage != want.usage || got.prompt != want.prompt || got.complete != want.complete ||
			got.reasonTok != want.reasonTok || got.err != want.err {
			t.Fatalf("%q:\n got %+v\nwant %+v", data, *got, want)
		}
		if want.errMsg != "" && got.errMsg != want.errMsg {
			t.Fatalf("%q: error message %q, want %q", data, got.errMsg, want.errMsg)
		}
	})
}

// BenchmarkChunkDecode is one typical completions chunk.
func BenchmarkChunkDecode(b *testing.B) {
	data := []byte(`{"id":"cmpl-1","object":"text_completion","created":1700000000,"model":"m","choices":[{"index":0,"text":" word","logprobs":null,"finish_reason":null,"stop_reason":null}],"usage":null}`)
	var d decoder
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := d.decode(data); err != nil {
			b.Fatal(err)
		}
	}
}
