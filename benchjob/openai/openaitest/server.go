// Package openaitest is a fake OpenAI-compatible streaming server for tests
// and benchmarks: it can leave out usage, fail with a status, cut or garble
// the stream, wait before the first token, answer as another model and send
// reasoning content.
package openaitest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Behavior is how the server answers; tests may change it while it runs
// (Server.Set).
type Behavior struct {
	// Model is the served id (default "test-model"); AnswerModel, when set,
	// is the model named in the chunks instead (a wrong model).
	Model       string
	AnswerModel string
	// Tokens is the output length when the request has no max_tokens (default 4).
	Tokens int
	// NoUsage leaves usage out of the stream.
	NoUsage bool
	// Status answers every generation request with this status and a JSON error.
	Status int
	// FailEvery answers every Nth generation request with FailStatus.
	FailEvery, FailStatus int
	// BreakAfter cuts the stream (closes the connection) after this many chunks.
	BreakAfter int
	// Malformed sends a chunk that is not JSON after the first token.
	Malformed bool
	// StreamError sends {"error": ...} after the first token.
	StreamError bool
	// NotStreaming answers with one JSON completion, as a server that
	// ignores "stream": true does.
	NotStreaming bool
	// NoDone leaves out the final [DONE] (and the finish_reason when NoFinish).
	NoDone, NoFinish bool
	// FirstTokenDelay waits before the first chunk; TokenDelay between chunks.
	FirstTokenDelay, TokenDelay time.Duration
	// Reasoning sends the first N tokens as reasoning_content (chat) and
	// reports them as reasoning_tokens.
	Reasoning int
	// Health answers /health with this status (default 200); ModelsStatus
	// /v1/models likewise; NotReadyFor makes both 503 for that long after start.
	Health, ModelsStatus int
	NotReadyFor          time.Duration
	MaxModelLen          int
	// Usage, when set, is the raw JSON of the usage block sent instead of
	// the true counts (a hostile or broken engine: negative, fractional,
	// absurd counts).
	Usage string
	// Empty answers with a stream that is only "data: [DONE]".
	Empty bool
	// RetryAfter is the Retry-After header sent with a Status or
	// FailStatus answer ("" none).
	RetryAfter string
	// Answer, when set, is the generated text for a prompt (the chat
	// message's content or the completion prompt), streamed one word per
	// token; max_tokens then only caps it.
	Answer func(prompt string) string
}

// Server is a running fake engine.
type Server struct {
	*httptest.Server
	mu       sync.Mutex
	b        Behavior
	started  time.Time
	requests atomic.Int64
	bodies   []map[string]any
	keep     bool
	auth     atomic.Value
}

// New starts a server on 127.0.0.1 with behavior b. KeepBodies records each
// generation request's JSON body.
func New(b Behavior) *Server {
	s := &Server{b: b, started: time.Now()}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", s.health)
	mux.HandleFunc("GET /v1/models", s.models)
	mux.HandleFunc("GET /version", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"version":"0.0.0-fake"}`)
	})
	mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		fmt.Fprint(w, "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{model_name=\"m\"} 2\n"+
			"# TYPE vllm:num_requests_waiting gauge\nvllm:num_requests_waiting{model_name=\"m\"} 1\n")
	})
	mux.HandleFunc("POST /v1/completions", func(w http.ResponseWriter, r *http.Request) { s.generate(w, r, false) })
	mux.HandleFunc("POST /v1/chat/completions", func(w http.ResponseWriter, r *http.Request) { s.generate(w, r, true) })
	s.Server = httptest.NewServer(mux)
	return s
}

// KeepBodies makes the server record request bodies (Bodies).
func (s *Server) KeepBodies() { s.mu.Lock(); s.keep = true; s.mu.Unlock() }

// Bodies returns the recorded generation request bodies.
func (s *Server) Bodies() []map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]map[string]any(nil), s.bodies...)
}

// Set replaces the behavior.
func (s *Server) Set(b Behavior) { s.mu.Lock(); s.b = b; s.mu.Unlock() }

// Requests is the number of generation requests received.
func (s *Server) Requests() int64 { return s.requests.Load() }

// LastAuth is the Authorization header of the last generation request.
func (s *Server) LastAuth() string { v, _ := s.auth.Load().(string); return v }

// BaseURL is the OpenAI base URL (…/v1).
func (s *Server) BaseURL() string { return s.URL + "/v1" }

func (s *Server) get() Behavior {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.b
	if b.Model == "" {
		b.Model = "test-model"
	}
	if b.Tokens == 0 {
		b.Tokens = 4
	}
	return b
}

func (s *Server) notReady(b Behavior) bool { return time.Since(s.started) < b.NotReadyFor }

func (s *Server) health(w http.ResponseWriter, _ *http.Request) {
	b := s.get()
	switch {
	case s.notReady(b):
		w.WriteHeader(http.StatusServiceUnavailable)
	case b.Health != 0:
		w.WriteHeader(b.Health)
	}
}

func (s *Server) models(w http.ResponseWriter, _ *http.Request) {
	b := s.get()
	switch {
	case s.notReady(b):
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	case b.ModelsStatus != 0:
		w.WriteHeader(b.ModelsStatus)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	m := map[string]any{"id": b.Model, "object": "model", "owned_by": "joulemark"}
	if b.MaxModelLen > 0 {
		m["max_model_len"] = b.MaxModelLen
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": []any{m}})
}

var words = []string{" the", " quick", " brown", " fox", " jumps", " over", " lazy", " dog"}

func (s *Server) generate(w http.ResponseWriter, r *http.Request, chat bool) {
	n := s.requests.Add(1)
	s.auth.Store(r.Header.Get("Authorization"))
	b := s.get()
	var body struct {
		Model     string `json:"model"`
		MaxTokens int    `json:"max_tokens"`
		Stream    bool   `json:"stream"`
		Prompt    string `json:"prompt"`
		Messages  []struct {
			Content string `json:"content"`
		} `json:"messages"`
	}
	var raw map[string]any
	if err := json.NewDecoder(r.Body).Decode(&raw); err != nil {
		http.Error(w, `{"error":{"message":"bad json"}}`, http.StatusBadRequest)
		return
	}
	if s.keep {
		s.mu.Lock()
		s.bodies = append(s.bodies, raw)
		s.mu.Unlock()
	}
	rb, _ := json.Marshal(raw)
	_ = json.Unmarshal(rb, &body)
	status := b.Status
	if b.FailEvery > 0 && n%int64(b.FailEvery) == 0 {
		status = b.FailStatus
	}
	if status != 0 {
		if b.RetryAfter != "" {
			w.Header().Set("Retry-After", b.RetryAfter)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		fmt.Fprintf(w, `{"error":{"message":"fake failure %d","type":"server_error"}}`, status)
		return
	}
	if body.Model != b.Model {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprintf(w, `{"error":{"message":"model %q does not exist"}}`, body.Model)
		return
	}
	tokens := b.Tokens
	if body.MaxTokens > 0 {
		tokens = body.MaxTokens
	}
	ws := words
	if b.Answer != nil {
		prompt := body.Prompt
		if len(body.Messages) > 0 {
			prompt = body.Messages[len(body.Messages)-1].Content
		}
		ws = nil
		for i, w := range strings.Fields(b.Answer(prompt)) {
			if i > 0 {
				w = " " + w
			}
			ws = append(ws, w)
		}
		if len(ws) == 0 {
			ws = []string{""}
		}
		tokens = min(tokens, len(ws))
	}
	answer := b.Model
	if b.AnswerModel != "" {
		answer = b.AnswerModel
	}
	if b.NotStreaming {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"cmpl-%d","object":"text_completion","model":%q,"choices":[{"index":0,"text":" the quick","finish_reason":"length"}],"usage":{"prompt_tokens":7,"completion_tokens":%d}}`, n, answer, tokens)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	fl, _ := w.(http.Flusher)
	flush := func() {
		if fl != nil {
			fl.Flush()
		}
	}
	id := "cmpl-" + strconv.FormatInt(n, 10)
	if b.Empty {
		fmt.Fprint(w, "data: [DONE]\n\n")
		return
	}
	if b.FirstTokenDelay > 0 {
		select {
		case <-time.After(b.FirstTokenDelay):
		case <-r.Context().Done():
			return
		}
	}
	for i := 0; i < tokens; i++ {
		if b.BreakAfter > 0 && i == b.BreakAfter {
			panic(http.ErrAbortHandler) // cuts the connection
		}
		if i > 0 && b.TokenDelay > 0 {
			select {
			case <-time.After(b.TokenDelay):
			case <-r.Context().Done():
				return
			}
		}
		if i == 1 && b.Malformed {
			fmt.Fprint(w, "data: {\"choices\": [oops\n\n")
			flush()
			return
		}
		if i == 1 && b.StreamError {
			fmt.Fprint(w, "data: {\"error\": {\"message\": \"engine overloaded\", \"type\": \"server_error\"}}\n\n")
			flush()
			return
		}
		finish := "null"
		if i == tokens-1 && !b.NoFinish {
			finish = `"length"`
		}
		word := ws[i%len(ws)]
		var choice string
		switch {
		case chat && i < b.Reasoning:
			choice = fmt.Sprintf(`{"index":0,"delta":{"reasoning_content":%q},"finish_reason":%s}`, word, finish)
		case chat:
			choice = fmt.Sprintf(`{"index":0,"delta":{"content":%q},"finish_reason":%s}`, word, finish)
		default:
			choice = fmt.Sprintf(`{"index":0,"text":%q,"finish_reason":%s}`, word, finish)
		}
		obj := "text_completion"
		if chat {
			obj = "chat.completion.chunk"
		}
		fmt.Fprintf(w, "data: {\"id\":%q,\"object\":%q,\"model\":%q,\"choices\":[%s]}\n\n", id, obj, answer, choice)
		flush()
	}
	switch {
	case b.Usage != "":
		fmt.Fprintf(w, "data: {\"id\":%q,\"model\":%q,\"choices\":[],\"usage\":%s}\n\n", id, answer, b.Usage)
	case !b.NoUsage:
		prompt := 7
		fmt.Fprintf(w, "data: {\"id\":%q,\"model\":%q,\"choices\":[],\"usage\":{\"prompt_tokens\":%d,\"completion_tokens\":%d,\"total_tokens\":%d,\"completion_tokens_details\":{\"reasoning_tokens\":%d}}}\n\n",
			id, answer, prompt, tokens, prompt+tokens, min(b.Reasoning, tokens))
	}
	if !b.NoDone {
		fmt.Fprint(w, "data: [DONE]\n\n")
	}
	flush()
}
