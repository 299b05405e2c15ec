package simengine

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// The OpenAI-compatible request and response documents, shaped as vLLM
// sends them.

type streamOptions struct {
	IncludeUsage         bool `json:"include_usage"`
	ContinuousUsageStats bool `json:"continuous_usage_stats"`
}

// commonParams are the sampling fields both endpoints take.
type commonParams struct {
	Model               string         `json:"model"`
	MaxTokens           *int           `json:"max_tokens"`
	MaxCompletionTokens *int           `json:"max_completion_tokens"`
	MinTokens           int            `json:"min_tokens"`
	IgnoreEOS           bool           `json:"ignore_eos"`
	Stream              bool           `json:"stream"`
	StreamOptions       *streamOptions `json:"stream_options"`
	Seed                *int64         `json:"seed"`
	N                   *int           `json:"n"`
}

// apiRequest is a decoded completion or chat request.
type apiRequest interface {
	params() *commonParams
	promptTokens() (int, error)
}

func (p *commonParams) params() *commonParams { return p }

type completionRequest struct {
	commonParams
	Prompt json.RawMessage `json:"prompt"`
}

type chatMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

type chatRequest struct {
	commonParams
	Messages []chatMessage `json:"messages"`
}

func (q *completionRequest) promptTokens() (int, error) { return promptLen(q.Prompt) }

func (q *chatRequest) promptTokens() (int, error) { return chatLen(q.Messages) }

type usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	TotalTokens      int `json:"total_tokens"`
	CompletionTokens int `json:"completion_tokens"`
}

type completionChoice struct {
	Index        int       `json:"index"`
	Text         string    `json:"text"`
	Logprobs     *struct{} `json:"logprobs"`
	FinishReason *string   `json:"finish_reason"`
	StopReason   *string   `json:"stop_reason"`
}

// completionChunk is both a streamed chunk and (with usage set) the
// non-streaming response; vLLM writes "usage": null on content chunks.
type completionChunk struct {
	ID      string             `json:"id"`
	Object  string             `json:"object"`
	Created int64              `json:"created"`
	Model   string             `json:"model"`
	Choices []completionChoice `json:"choices"`
	Usage   *usage             `json:"usage"`
}

type chatDelta struct {
	Role    string  `json:"role,omitempty"`
	Content *string `json:"content,omitempty"`
}

type chatChunkChoice struct {
	Index        int       `json:"index"`
	Delta        chatDelta `json:"delta"`
	Logprobs     *struct{} `json:"logprobs"`
	FinishReason *string   `json:"finish_reason"`
}

// chatChunk is a streamed chat chunk; vLLM omits usage unless it is set.
type chatChunk struct {
	ID      string            `json:"id"`
	Object  string            `json:"object"`
	Created int64             `json:"created"`
	Model   string            `json:"model"`
	Choices []chatChunkChoice `json:"choices"`
	Usage   *usage            `json:"usage,omitempty"`
}

type chatResponseMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type chatChoice struct {
	Index        int                 `json:"index"`
	Message      chatResponseMessage `json:"message"`
	Logprobs     *struct{}           `json:"logprobs"`
	FinishReason string              `json:"finish_reason"`
	StopReason   *string             `json:"stop_reason"`
}

type chatResponse struct {
	ID      string       `json:"id"`
	Object  string       `json:"object"`
	Created int64        `json:"created"`
	Model   string       `json:"model"`
	Choices []chatChoice `json:"choices"`
	Usage   usage        `json:"usage"`
}

type modelCard struct {
	ID          string  `json:"id"`
	Object      string  `json:"object"`
	Created     int64   `json:"created"`
	OwnedBy     string  `json:"owned_by"`
	Root        string  `json:"root"`
	Parent      *string `json:"parent"`
	MaxModelLen int     `json:"max_model_len"`
}

type modelList struct {
	Object string      `json:"object"`
	Data   []modelCard `json:"data"`
}

// apiError is the error document (OpenAI's shape, which vLLM uses).
type apiError struct {
	Error apiErrorInfo `json:"error"`
}

type apiErrorInfo struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    int     `json:"code"`
}

func writeError(w http.ResponseWriter, code int, typ, format string, args ...any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(apiError{Error: apiErrorInfo{
		Message: fmt.Sprintf(format, args...), Type: typ, Code: code}})
}

// badRequest is a client error with its message.
type badRequest struct{ msg string }

func (b *badRequest) Error() string { return b.msg }

func badf(format string, args ...any) error { return &badRequest{fmt.Sprintf(format, args...)} }

// decodeJSON reads a request body of at most 32 MiB into v.
func decodeJSON(w http.ResponseWriter, r *http.Request, v any) error {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 32<<20))
	if err := dec.Decode(v); err != nil {
		return badf("invalid JSON request body: %v", err)
	}
	return nil
}

// promptLen counts the tokens of a completion prompt: a string, a list of
// one string, a list of token ids or a list of one list of token ids.
func promptLen(raw json.RawMessage) (int, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return 0, badf("prompt: missing")
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return promptTokens(s), nil
	}
	var ss []string
	if json.Unmarshal(raw, &ss) == nil {
		if len(ss) != 1 {
			return 0, badf("prompt: %d prompts in one request; the simulator takes exactly one", len(ss))
		}
		return promptTokens(ss[0]), nil
	}
	var ids []int
	if json.Unmarshal(raw, &ids) == nil {
		return len(ids), nil
	}
	var idss [][]int
	if json.Unmarshal(raw, &idss) == nil {
		if len(idss) != 1 {
			return 0, badf("prompt: %d prompts in one request; the simulator takes exactly one", len(idss))
		}
		return len(idss[0]), nil
	}
	return 0, badf("prompt: want a string, a list of one string or token ids")
}

// chatLen counts the tokens of chat messages, template included.
func chatLen(msgs []chatMessage) (int, error) {
	if len(msgs) == 0 {
		return 0, badf("messages: empty")
	}
	n := 0
	for i, m := range msgs {
		if m.Role == "" {
			return 0, badf("messages[%d].role: missing", i)
		}
		n += chatTemplateTokens
		raw := bytes.TrimSpace(m.Content)
		if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
			continue
		}
		var s string
		if json.Unmarshal(raw, &s) == nil {
			n += promptTokens(s)
			continue
		}
		var parts []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		if err := json.Unmarshal(raw, &parts); err != nil {
			return 0, badf("messages[%d].content: want a string or a list of parts", i)
		}
		for j, p := range parts {
			if p.Type != "text" {
				return 0, badf("messages[%d].content[%d].type: %q, the simulator takes only text", i, j, p.Type)
			}
			n += promptTokens(p.Text)
		}
	}
	return n, nil
}

// validate turns the common parameters into an engine request, applying
// vLLM's checks against the context length.
func (e *Engine) validate(p *commonParams, prompt int, chat bool) (request, error) {
	if p.Model != "" && p.Model != e.cfg.Model {
		return request{}, &notFound{fmt.Sprintf("The model `%s` does not exist.", p.Model)}
	}
	if p.StreamOptions != nil && !p.Stream {
		return request{}, badf("stream_options: only with stream: true")
	}
	if p.N != nil && *p.N != 1 {
		return request{}, badf("n: %d, the simulator generates exactly one choice", *p.N)
	}
	maxTok := p.MaxTokens
	if p.MaxCompletionTokens != nil {
		maxTok = p.MaxCompletionTokens
	}
	if prompt < 1 {
		return request{}, badf("prompt: empty (no tokens)")
	}
	if prompt >= e.cfg.MaxModelLen {
		return request{}, badf("This model's maximum context length is %d tokens. However, your request has %d input tokens. Please reduce the length of the input messages.", e.cfg.MaxModelLen, prompt)
	}
	n := e.cfg.MaxModelLen - prompt
	if maxTok != nil {
		if *maxTok < 1 {
			return request{}, badf("max_tokens: %d, must be at least 1", *maxTok)
		}
		if prompt+*maxTok > e.cfg.MaxModelLen {
			return request{}, badf("This model's maximum context length is %d tokens. However, you requested %d tokens (%d in the messages, %d in the completion). Please reduce the length of the messages or completion.",
				e.cfg.MaxModelLen, prompt+*maxTok, prompt, *maxTok)
		}
		n = *maxTok
	}
	if p.MinTokens < 0 || p.MinTokens > n {
		return request{}, badf("min_tokens: %d, must be between 0 and max_tokens %d", p.MinTokens, n)
	}
	return request{prompt: prompt, maxTokens: n, minTokens: p.MinTokens, ignoreEOS: p.IgnoreEOS, seed: p.Seed, chat: chat}, nil
}

type notFound struct{ msg string }

func (n *notFound) Error() string { return n.msg }

// writeRequestError maps a request error to its HTTP answer.
func writeRequestError(w http.ResponseWriter, err error) {
	var br *badRequest
	var nf *notFound
	switch {
	case errors.As(err, &br):
		writeError(w, http.StatusBadRequest, "BadRequestError", "%s", br.msg)
	case errors.As(err, &nf):
		writeError(w, http.StatusNotFound, "NotFoundError", "%s", nf.msg)
	case errors.Is(err, errNotReady):
		writeError(w, http.StatusServiceUnavailable, "ServiceUnavailableError", "engine is not serving (loading weights or shutting down)")
	case errors.Is(err, errFault):
		writeError(w, http.StatusInternalServerError, "InternalServerError", "%s", err)
	default:
		writeError(w, http.StatusInternalServerError, "InternalServerError", "%s", err)
	}
}

// text joins tokens [from, to) of s.
func (s *seq) text(from, to int) string {
	var b strings.Builder
	for i := from; i < to; i++ {
		b.WriteString(tokenText(s.seed, i))
	}
	return b.String()
}

func (s *seq) usage(completion int) *usage {
	return &usage{PromptTokens: s.prompt, CompletionTokens: completion, TotalTokens: s.prompt + completion}
}
