package openai

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/joulemark/joulemark/internal/jsonappend"
)

// Body returns the JSON body the client sends for r.
func Body(r *Request) ([]byte, error) { return appendBody(nil, r) }

// appendBody appends r's body, the fields in this order, as json.Marshal
// writes them: model, prompt (or messages with one user message),
// max_tokens when not 0, stream, stream_options, then the extras that are
// set (ignore_eos, min_tokens, temperature, seed, chat_template_kwargs).
func appendBody(b []byte, r *Request) ([]byte, error) {
	b = jsonappend.String(append(b, `{"model":`...), r.Model)
	switch r.Endpoint {
	case Chat:
		b = jsonappend.String(append(b, `,"messages":[{"role":"user","content":`...), r.Prompt)
		b = append(b, "}]"...)
	case Completions, "":
		if r.Prompt != "" {
			b = jsonappend.String(append(b, `,"prompt":`...), r.Prompt)
		}
	default:
		return nil, fmt.Errorf("unknown endpoint %q (want completions or chat)", r.Endpoint)
	}
	if n := r.maxTokens(); n != 0 {
		b = strconv.AppendInt(append(b, `,"max_tokens":`...), int64(n), 10)
	}
	b = append(b, `,"stream":true,"stream_options":{"include_usage":true}`...)
	x := &r.Extras
	if x.IgnoreEOS != nil {
		b = strconv.AppendBool(append(b, `,"ignore_eos":`...), *x.IgnoreEOS)
	}
	if x.MinTokens != nil {
		b = strconv.AppendInt(append(b, `,"min_tokens":`...), int64(*x.MinTokens), 10)
	}
	if x.Temperature != nil {
		var ok bool
		if b, ok = jsonappend.Float(append(b, `,"temperature":`...), *x.Temperature); !ok {
			return nil, &json.UnsupportedValueError{Str: strconv.FormatFloat(*x.Temperature, 'g', -1, 64)}
		}
	}
	if x.Seed != nil {
		b = strconv.AppendInt(append(b, `,"seed":`...), *x.Seed, 10)
	}
	if r.Endpoint == Chat && x.EnableThinking != nil {
		b = strconv.AppendBool(append(b, `,"chat_template_kwargs":{"enable_thinking":`...), *x.EnableThinking)
		b = append(b, '}')
	}
	return append(b, '}'), nil
}
