package openai

import (
	"encoding/json"
	"math"
	"testing"
)

// The body as the client built it before appendBody: json.Marshal of
// this struct is the reference appendBody is held to.
type message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

type body struct {
	Model              string          `json:"model"`
	Prompt             string          `json:"prompt,omitempty"`
	Messages           []message       `json:"messages,omitempty"`
	MaxTokens          int             `json:"max_tokens,omitempty"`
	Stream             bool            `json:"stream"`
	StreamOptions      streamOptions   `json:"stream_options"`
	IgnoreEOS          *bool           `json:"ignore_eos,omitempty"`
	MinTokens          *int            `json:"min_tokens,omitempty"`
	Temperature        *float64        `json:"temperature,omitempty"`
	Seed               *int64          `json:"seed,omitempty"`
	ChatTemplateKwargs map[string]bool `json:"chat_template_kwargs,omitempty"`
}

// marshalBody is the reference body of r (the client's Body before
// appendBody).
func marshalBody(r *Request) ([]byte, error) {
	b := body{Model: r.Model, MaxTokens: r.MaxTokens, Stream: true, StreamOptions: streamOptions{IncludeUsage: true},
		IgnoreEOS: r.Extras.IgnoreEOS, MinTokens: r.Extras.MinTokens, Temperature: r.Extras.Temperature, Seed: r.Extras.Seed}
	b.MaxTokens = r.maxTokens()
	switch r.Endpoint {
	case Chat:
		b.Messages = []message{{Role: "user", Content: r.Prompt}}
		if r.Extras.EnableThinking != nil {
			b.ChatTemplateKwargs = map[string]bool{"enable_thinking": *r.Extras.EnableThinking}
		}
	case Completions, "":
		b.Prompt = r.Prompt
	}
	return json.Marshal(&b)
}

// checkBody: appendBody writes json.Marshal's body, or fails where it does.
func checkBody(t *testing.T, r *Request) {
	t.Helper()
	want, werr := marshalBody(r)
	got, err := appendBody(nil, r)
	if (err == nil) != (werr == nil) || string(got) != string(want) {
		t.Fatalf("appendBody(%+v) = %s, %v\njson.Marshal: %s, %v", r, got, err, want, werr)
	}
	if werr != nil && err.Error() != werr.Error() {
		t.Fatalf("appendBody: %v, json.Marshal: %v", err, werr)
	}
}

// TestAppendBody: both endpoints, every extra, the empty prompt and a
// temperature json.Marshal refuses.
func TestAppendBody(t *testing.T) {
	yes, n, f, seed := true, 3, 0.7, int64(-9)
	for _, e := range []Endpoint{"", Completions, Chat} {
		checkBody(t, &Request{Endpoint: e, Model: "m", Prompt: "line\n<&>\"x\"", MaxTokens: 4})
		checkBody(t, &Request{Endpoint: e})
		checkBody(t, &Request{Endpoint: e, Model: "é", Prompt: "p", MaxTokens: 4, Extras: Extras{IgnoreEOS: &yes,
			MinTokens: &n, Temperature: &f, Seed: &seed, MaxTokens: &n, EnableThinking: &yes}})
		nan := math.NaN()
		checkBody(t, &Request{Endpoint: e, Extras: Extras{Temperature: &nan}})
	}
	if _, err := appendBody(nil, &Request{Endpoint: "x"}); err == nil {
		t.Error("an unknown endpoint: no error")
	}
}

// FuzzAppendBody: appendBody against json.Marshal on fuzzed requests.
func FuzzAppendBody(f *testing.F) {
	f.Add(true, "m", "Randomly stream lines\n\nfrom <this>", 4, 1e-7, int64(1), uint8(0xff))
	f.Fuzz(func(t *testing.T, chat bool, model, prompt string, n int, temp float64, seed int64, set uint8) {
		r := &Request{Endpoint: Completions, Model: model, Prompt: prompt, MaxTokens: n}
		if chat {
			r.Endpoint = Chat
		}
		b := set&32 != 0
		if set&1 != 0 {
			r.Extras.IgnoreEOS = &b
		}
		if set&2 != 0 {
			r.Extras.MinTokens = &n
		}
		if set&4 != 0 {
			r.Extras.Temperature = &temp
		}
		if set&8 != 0 {
			r.Extras.Seed = &seed
		}
		if set&16 != 0 {
			r.Extras.EnableThinking = &b
		}
		if set&64 != 0 {
			r.Extras.MaxTokens = &n
		}
		checkBody(t, r)
	})
}
