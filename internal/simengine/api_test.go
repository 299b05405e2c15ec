package simengine

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/joulemark/joulemark/internal/testkit/golden"
)

// created is the only field of a chunk that changes between runs.
var createdRE = regexp.MustCompile(`"created":\d+`)

func TestStreamGolden(t *testing.T) {
	tests := []struct {
		name   string
		path   string
		body   map[string]any
		golden string
	}{
		{
			name: "completion with usage",
			path: "/v1/completions",
			body: map[string]any{"model": "test-model", "prompt": "how much energy per token", "max_tokens": 4,
				"ignore_eos": true, "stream": true, "stream_options": map[string]any{"include_usage": true}},
			golden: "completion_stream.golden",
		},
		{
			name:   "completion without usage",
			path:   "/v1/completions",
			body:   map[string]any{"prompt": []string{"one two three"}, "max_tokens": 2, "stream": true},
			golden: "completion_stream_nousage.golden",
		},
		{
			name: "chat with continuous usage",
			path: "/v1/chat/completions",
			body: map[string]any{"model": "test-model", "messages": []map[string]any{
				{"role": "system", "content": "be brief"},
				{"role": "user", "content": []map[string]string{{"type": "text", "text": "say three words"}}},
			}, "max_completion_tokens": 3, "stream": true,
				"stream_options": map[string]any{"include_usage": true, "continuous_usage_stats": true}},
			golden: "chat_stream.golden",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, srv := startEngine(t, nil) // a fresh engine: request ids and text start from the seed
			resp := post(t, context.Background(), srv.URL+tt.path, tt.body)
			if resp.StatusCode != http.StatusOK {
				b, _ := io.ReadAll(resp.Body)
				t.Fatalf("status %d: %s", resp.StatusCode, b)
			}
			res := readSSE(t, resp, time.Now())
			if res.readErr != nil {
				t.Fatalf("read: %v", res.readErr)
			}
			var b strings.Builder
			for _, ev := range res.events {
				b.WriteString("data: " + createdRE.ReplaceAllString(ev, `"created":0`) + "\n\n")
			}
			golden.Compare(t, tt.golden, []byte(b.String()))
			if len(res.chunkIDs) != 1 {
				t.Errorf("chunk ids %v, want one id for the whole stream", res.chunkIDs)
			}
		})
	}
}

func TestStreamUsageAndMaxTokens(t *testing.T) {
	_, srv := startEngine(t, nil)
	for _, maxTokens := range []int{1, 7, 50} {
		res := streamN(t, srv.URL, 1, map[string]any{"prompt": strings.Repeat("word ", 30), "max_tokens": maxTokens,
			"ignore_eos": true, "stream": true, "stream_options": map[string]any{"include_usage": true}})[0]
		if !res.done() {
			t.Fatalf("max_tokens %d: stream did not end with [DONE]: %v", maxTokens, res.events)
		}
		if res.usage == nil {
			t.Fatalf("max_tokens %d: no usage chunk", maxTokens)
		}
		want := usage{PromptTokens: 30, CompletionTokens: maxTokens, TotalTokens: 30 + maxTokens}
		if *res.usage != want {
			t.Errorf("max_tokens %d: usage %+v, want %+v", maxTokens, *res.usage, want)
		}
		if res.chunksTok != maxTokens || len(strings.Fields(res.text)) != maxTokens {
			t.Errorf("max_tokens %d: %d token chunks, text %q", maxTokens, res.chunksTok, res.text)
		}
		if res.finish != "length" {
			t.Errorf("max_tokens %d: finish_reason %q, want length", maxTokens, res.finish)
		}
	}
}

func TestNonStreaming(t *testing.T) {
	_, srv := startEngine(t, nil)
	tests := []struct {
		path string
		body map[string]any
	}{
		{"/v1/completions", map[string]any{"prompt": []int{1, 2, 3, 4}, "max_tokens": 6}},
		{"/v1/chat/completions", map[string]any{"messages": []map[string]any{{"role": "user", "content": "a b c"}}, "max_tokens": 6}},
	}
	for _, tt := range tests {
		resp := post(t, context.Background(), srv.URL+tt.path, tt.body)
		var doc struct {
			Object  string `json:"object"`
			Choices []struct {
				Text    string `json:"text"`
				Message struct {
					Role    string `json:"role"`
					Content string `json:"content"`
				} `json:"message"`
				FinishReason string `json:"finish_reason"`
			} `json:"choices"`
			Usage usage `json:"usage"`
		}
		err := json.NewDecoder(resp.Body).Decode(&doc)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: status %d, decode %v", tt.path, resp.StatusCode, err)
		}
		if len(doc.Choices) != 1 {
			t.Fatalf("%s: %d choices", tt.path, len(doc.Choices))
		}
		text := doc.Choices[0].Text + doc.Choices[0].Message.Content
		if n := len(strings.Fields(text)); n != 6 || doc.Usage.CompletionTokens != 6 || doc.Choices[0].FinishReason != "length" {
			t.Errorf("%s: %d words, usage %+v, finish %q", tt.path, n, doc.Usage, doc.Choices[0].FinishReason)
		}
		wantPrompt := 4
		if strings.Contains(tt.path, "chat") {
			wantPrompt = 3 + chatTemplateTokens
			if doc.Object != "chat.completion" || doc.Choices[0].Message.Role != "assistant" {
				t.Errorf("chat: object %q role %q", doc.Object, doc.Choices[0].Message.Role)
			}
		} else if doc.Object != "text_completion" {
			t.Errorf("completion: object %q", doc.Object)
		}
		if doc.Usage.PromptTokens != wantPrompt {
			t.Errorf("%s: prompt tokens %d, want %d", tt.path, doc.Usage.PromptTokens, wantPrompt)
		}
	}
}

func TestRequestErrors(t *testing.T) {
	_, srv := startEngine(t, func(c *Config) { c.MaxModelLen = 100 })
	tests := []struct {
		name, path string
		body       any
		code       int
		msg        string
	}{
		{"bad json", "/v1/completions", "{", http.StatusBadRequest, "invalid JSON"},
		{"no prompt", "/v1/completions", map[string]any{"max_tokens": 1}, http.StatusBadRequest, "prompt: missing"},
		{"empty prompt", "/v1/completions", map[string]any{"prompt": "  "}, http.StatusBadRequest, "prompt: empty"},
		{"two prompts", "/v1/completions", map[string]any{"prompt": []string{"a", "b"}}, http.StatusBadRequest, "exactly one"},
		{"wrong model", "/v1/completions", map[string]any{"model": "gpt-9", "prompt": "a"}, http.StatusNotFound, "`gpt-9` does not exist"},
		{"too long", "/v1/completions", map[string]any{"prompt": "a b c", "max_tokens": 98}, http.StatusBadRequest, "maximum context length is 100 tokens"},
		{"zero max", "/v1/completions", map[string]any{"prompt": "a", "max_tokens": 0}, http.StatusBadRequest, "at least 1"},
		{"min over max", "/v1/completions", map[string]any{"prompt": "a", "max_tokens": 2, "min_tokens": 3}, http.StatusBadRequest, "min_tokens"},
		{"stream options without stream", "/v1/completions", map[string]any{"prompt": "a", "stream_options": map[string]any{"include_usage": true}}, http.StatusBadRequest, "only with stream"},
		{"n=2", "/v1/completions", map[string]any{"prompt": "a", "n": 2}, http.StatusBadRequest, "exactly one choice"},
		{"no messages", "/v1/chat/completions", map[string]any{"messages": []any{}}, http.StatusBadRequest, "messages: empty"},
		{"image part", "/v1/chat/completions", map[string]any{"messages": []map[string]any{{"role": "user", "content": []map[string]string{{"type": "image_url"}}}}}, http.StatusBadRequest, "only text"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var resp *http.Response
			if s, ok := tt.body.(string); ok {
				r, err := http.Post(srv.URL+tt.path, "application/json", strings.NewReader(s))
				if err != nil {
					t.Fatal(err)
				}
				resp = r
			} else {
				resp = post(t, context.Background(), srv.URL+tt.path, tt.body)
			}
			defer resp.Body.Close()
			var doc apiError
			if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != tt.code || doc.Error.Code != tt.code || !strings.Contains(doc.Error.Message, tt.msg) {
				t.Errorf("got %d %+v, want %d with %q", resp.StatusCode, doc.Error, tt.code, tt.msg)
			}
		})
	}
}

func TestModels(t *testing.T) {
	_, srv := startEngine(t, nil)
	resp, err := http.Get(srv.URL + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var doc modelList
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Data) != 1 || doc.Data[0].ID != "test-model" || doc.Data[0].MaxModelLen != 4096 {
		t.Errorf("models %+v", doc)
	}
}
