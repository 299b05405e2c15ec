package openai_test

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/joulemark/joulemark/benchjob/openai"
	"github.com/joulemark/joulemark/benchjob/openai/openaitest"
	"github.com/joulemark/joulemark/internal/contract"
)

func TestStreamSuccess(t *testing.T) {
	for _, ep := range []openai.Endpoint{openai.Completions, openai.Chat} {
		t.Run(string(ep), func(t *testing.T) {
			srv := openaitest.New(openaitest.Behavior{TokenDelay: 5 * time.Millisecond})
			defer srv.Close()
			c, err := openai.New(openai.Config{BaseURL: srv.BaseURL(), APIKey: "sk-secret"})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			resp := c.Stream(context.Background(), &openai.Request{Endpoint: ep, Model: "test-model", Prompt: "hi", MaxTokens: 5})
			if resp.Err != nil {
				t.Fatal(resp.Err)
			}
			if !resp.UsageReported || resp.CompletionTokens != 5 || resp.PromptTokens != 7 || resp.Chunks != 5 {
				t.Errorf("usage %v completion %d prompt %d chunks %d", resp.UsageReported, resp.CompletionTokens, resp.PromptTokens, resp.Chunks)
			}
			if len(resp.ITL) != 4 {
				t.Errorf("ITL has %d gaps, want 4", len(resp.ITL))
			}
			// The server spaces chunks 5ms apart (20ms in all); a slow reader
			// may see two at once, but not all of them.
			var span time.Duration
			for _, d := range resp.ITL {
				span += d
			}
			if span < 5*time.Millisecond || resp.End.Sub(resp.FirstToken) < span {
				t.Errorf("ITL gaps %v", resp.ITL)
			}
			if resp.FirstToken.Before(resp.Send) || resp.End.Before(resp.FirstToken) {
				t.Errorf("times out of order: send %v first %v end %v", resp.Send, resp.FirstToken, resp.End)
			}
			if resp.FinishReason != "length" || resp.Model != "test-model" {
				t.Errorf("finish %q model %q", resp.FinishReason, resp.Model)
			}
			if resp.TextChars != len(" the quick brown fox jumps") || len(resp.TextSHA256) != 64 {
				t.Errorf("text chars %d sha %q", resp.TextChars, resp.TextSHA256)
			}
			if got := srv.LastAuth(); got != "Bearer sk-secret" {
				t.Errorf("Authorization = %q", got)
			}
		})
	}
}

func TestStreamBody(t *testing.T) {
	tr, f, seed, minT, mt := true, 0.5, int64(3), 2, 9
	think := false
	b, err := openai.Body(&openai.Request{Endpoint: openai.Chat, Model: "m", Prompt: "p", MaxTokens: 4,
		Extras: openai.Extras{IgnoreEOS: &tr, Temperature: &f, Seed: &seed, MinTokens: &minT, MaxTokens: &mt, EnableThinking: &think}})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"model":"m","messages":[{"role":"user","content":"p"}],"max_tokens":9,"stream":true,"stream_options":{"include_usage":true},"ignore_eos":true,"min_tokens":2,"temperature":0.5,"seed":3,"chat_template_kwargs":{"enable_thinking":false}}`
	if string(b) != want {
		t.Errorf("body\n got %s\nwant %s", b, want)
	}
	b, _ = openai.Body(&openai.Request{Endpoint: openai.Completions, Model: "m", Prompt: "p", MaxTokens: 4})
	if want := `{"model":"m","prompt":"p","max_tokens":4,"stream":true,"stream_options":{"include_usage":true}}`; string(b) != want {
		t.Errorf("body\n got %s\nwant %s", b, want)
	}
}

func TestStreamReasoning(t *testing.T) {
	srv := openaitest.New(openaitest.Behavior{Reasoning: 3, Tokens: 5})
	defer srv.Close()
	c, _ := openai.New(openai.Config{BaseURL: srv.BaseURL()})
	resp := c.Stream(context.Background(), &openai.Request{Endpoint: openai.Chat, Model: "test-model", Prompt: "hi"})
	if resp.Err != nil {
		t.Fatal(resp.Err)
	}
	if resp.ReasoningTokens != 3 || resp.ReasoningChars != len(" the quick brown") || resp.TextChars != len(" fox jumps") {
		t.Errorf("reasoning tokens %d chars %d, text chars %d", resp.ReasoningTokens, resp.ReasoningChars, resp.TextChars)
	}
	if resp.Chunks != 5 || len(resp.ITL) != 4 {
		t.Errorf("chunks %d ITL %d: reasoning chunks count as tokens", resp.Chunks, len(resp.ITL))
	}
}

func TestStreamNoUsage(t *testing.T) {
	srv := openaitest.New(openaitest.Behavior{NoUsage: true, Tokens: 6})
	defer srv.Close()
	c, _ := openai.New(openai.Config{BaseURL: srv.BaseURL()})
	resp := c.Stream(context.Background(), &openai.Request{Model: "test-model", Prompt: "hi"})
	if resp.Err != nil || resp.UsageReported || resp.CompletionTokens != 6 {
		t.Fatalf("err %v usage %v tokens %d", resp.Err, resp.UsageReported, resp.CompletionTokens)
	}
	c2, _ := openai.New(openai.Config{BaseURL: srv.BaseURL(), RequireUsage: true})
	resp = c2.Stream(context.Background(), &openai.Request{Model: "test-model", Prompt: "hi"})
	if openai.ClassOf(resp.Err) != contract.ClassMissingUsage {
		t.Fatalf("err %v, want missing_usage", resp.Err)
	}
}

func TestStreamFailureClasses(t *testing.T) {
	// A port nothing listens on.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + l.Addr().String() + "/v1"
	l.Close()

	tests := []struct {
		name   string
		b      openaitest.Behavior
		cfg    openai.Config
		model  string
		target string
		want   contract.ErrorClass
		status int
	}{
		{name: "http 500", b: openaitest.Behavior{Status: 500}, want: contract.ClassHTTPStatus, status: 500},
		{name: "http 429", b: openaitest.Behavior{Status: 429}, want: contract.ClassHTTPStatus, status: 429},
		{name: "unknown model 404", model: "other", want: contract.ClassHTTPStatus, status: 404},
		{name: "wrong model in stream", b: openaitest.Behavior{AnswerModel: "impostor"}, want: contract.ClassWrongModel},
		{name: "broken stream", b: openaitest.Behavior{BreakAfter: 2}, want: contract.ClassBrokenStream},
		{name: "no done no finish", b: openaitest.Behavior{NoDone: true, NoFinish: true, NoUsage: true}, want: contract.ClassBrokenStream},
		{name: "malformed chunk", b: openaitest.Behavior{Malformed: true}, want: contract.ClassMalformedStream},
		{name: "not streaming", b: openaitest.Behavior{NotStreaming: true}, want: contract.ClassMalformedStream},
		{name: "error in stream", b: openaitest.Behavior{StreamError: true}, want: contract.ClassStreamError},
		{name: "first token timeout", b: openaitest.Behavior{FirstTokenDelay: 2 * time.Second},
			cfg: openai.Config{FirstTokenTimeout: 50 * time.Millisecond}, want: contract.ClassTimeoutFirstToken},
		{name: "total timeout", b: openaitest.Behavior{TokenDelay: 30 * time.Millisecond, Tokens: 50},
			cfg: openai.Config{TotalTimeout: 100 * time.Millisecond, FirstTokenTimeout: time.Second}, want: contract.ClassTimeoutTotal},
		{name: "connection refused", target: dead, want: contract.ClassConnect},
		{name: "idle mid-stream", b: openaitest.Behavior{TokenDelay: 2 * time.Second, Tokens: 3},
			cfg: openai.Config{IdleTimeout: 100 * time.Millisecond}, want: contract.ClassTimeoutIdle},
		{name: "never answers", target: silent(t), cfg: openai.Config{IdleTimeout: 100 * time.Millisecond}, want: contract.ClassTimeoutIdle},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := openaitest.New(tt.b)
			defer srv.Close()
			cfg := tt.cfg
			cfg.BaseURL = srv.BaseURL()
			if tt.target != "" {
				cfg.BaseURL = tt.target
			}
			c, err := openai.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			model := "test-model"
			if tt.model != "" {
				model = tt.model
			}
			t0 := time.Now()
			resp := c.Stream(context.Background(), &openai.Request{Model: model, Prompt: "x"})
			if got := openai.ClassOf(resp.Err); got != tt.want {
				t.Fatalf("class %q (%v), want %q", got, resp.Err, tt.want)
			}
			if resp.StatusCode != tt.status && tt.status != 0 {
				t.Errorf("status %d, want %d", resp.StatusCode, tt.status)
			}
			if resp.End.Before(resp.Send) || resp.Send.Before(t0) {
				t.Errorf("send %v end %v", resp.Send, resp.End)
			}
			if strings.Contains(resp.Err.Error(), "sk-") {
				t.Errorf("error leaks a key: %v", resp.Err)
			}
		})
	}
}

func TestStreamCanceled(t *testing.T) {
	srv := openaitest.New(openaitest.Behavior{FirstTokenDelay: 5 * time.Second})
	defer srv.Close()
	c, _ := openai.New(openai.Config{BaseURL: srv.BaseURL()})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	resp := c.Stream(ctx, &openai.Request{Model: "test-model", Prompt: "x"})
	if openai.ClassOf(resp.Err) != contract.ClassCanceled {
		t.Fatalf("err %v, want canceled", resp.Err)
	}
}

func TestModelsHealthVersion(t *testing.T) {
	srv := openaitest.New(openaitest.Behavior{MaxModelLen: 4096})
	defer srv.Close()
	c, _ := openai.New(openai.Config{BaseURL: srv.BaseURL() + "/"})
	if err := c.Health(context.Background()); err != nil {
		t.Fatal(err)
	}
	ms, err := c.Models(context.Background())
	if err != nil || len(ms) != 1 || ms[0].ID != "test-model" || ms[0].MaxModelLen != 4096 {
		t.Fatalf("models %+v err %v", ms, err)
	}
	if v := c.Version(context.Background()); v != "0.0.0-fake" {
		t.Errorf("version %q", v)
	}
	if _, err := openai.New(openai.Config{BaseURL: "ftp://x"}); err == nil {
		t.Error("ftp target accepted")
	}
}

// silent is the base URL of a server that accepts connections and never
// answers.
func silent(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	}()
	t.Cleanup(func() {
		l.Close()
		<-done
		for _, c := range conns {
			c.Close()
		}
	})
	return "http://" + l.Addr().String() + "/v1"
}

// TestStreamCanceledAtEnd: a request its caller ends because the phase is
// over has its own class, distinct from an abort.
func TestStreamCanceledAtEnd(t *testing.T) {
	c, err := openai.New(openai.Config{BaseURL: silent(t)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	time.AfterFunc(50*time.Millisecond, func() { cancel(openai.ErrCanceledAtEnd) })
	resp := c.Stream(ctx, &openai.Request{Model: "m", Prompt: "x"})
	if got := openai.ClassOf(resp.Err); got != contract.ClassCanceledAtEnd {
		t.Fatalf("class %q (%v), want canceled_at_end", got, resp.Err)
	}
}

// TestStreamIdleTimeoutRearms: a slow stream whose bytes keep coming is not
// idle, however long it takes in all.
func TestStreamIdleTimeoutRearms(t *testing.T) {
	srv := openaitest.New(openaitest.Behavior{TokenDelay: 40 * time.Millisecond, Tokens: 10})
	defer srv.Close()
	c, err := openai.New(openai.Config{BaseURL: srv.BaseURL(), IdleTimeout: 150 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	resp := c.Stream(context.Background(), &openai.Request{Model: "test-model", Prompt: "x"})
	if resp.Err != nil || resp.End.Sub(resp.Send) < 300*time.Millisecond {
		t.Fatalf("slow stream: %v after %v, want success after more than twice the idle timeout", resp.Err, resp.End.Sub(resp.Send))
	}
}

// TestStreamUsageValidated: a usage block that cannot be true and an
// answer with neither content nor tokens are failures with their own
// classes, never successes.
func TestStreamUsageValidated(t *testing.T) {
	tests := []struct {
		name string
		b    openaitest.Behavior
		max  int
		want contract.ErrorClass
	}{
		{"negative", openaitest.Behavior{Usage: `{"completion_tokens":-1000000,"prompt_tokens":-5}`}, 4, contract.ClassInvalidUsage},
		{"negative prompt", openaitest.Behavior{Usage: `{"completion_tokens":4,"prompt_tokens":-5}`}, 4, contract.ClassInvalidUsage},
		{"fraction", openaitest.Behavior{Usage: `{"completion_tokens":3.5,"prompt_tokens":7}`}, 4, contract.ClassInvalidUsage},
		{"NaN string", openaitest.Behavior{Usage: `{"completion_tokens":"NaN","prompt_tokens":7}`}, 4, contract.ClassInvalidUsage},
		{"no completion_tokens", openaitest.Behavior{Usage: `{"prompt_tokens":7}`}, 4, contract.ClassInvalidUsage},
		{"1e15 for max_tokens 5", openaitest.Behavior{Usage: `{"completion_tokens":1000000000000000,"prompt_tokens":7}`}, 5, contract.ClassInvalidUsage},
		{"beyond max_tokens and slack", openaitest.Behavior{Usage: `{"completion_tokens":21,"prompt_tokens":7}`}, 4, contract.ClassInvalidUsage},
		{"reasoning above completion", openaitest.Behavior{Usage: `{"completion_tokens":4,"completion_tokens_details":{"reasoning_tokens":9}}`}, 4, contract.ClassInvalidUsage},
		{"only [DONE]", openaitest.Behavior{Empty: true}, 4, contract.ClassEmptyResponse},
		{"only [DONE], usage required", openaitest.Behavior{Empty: true}, 4, contract.ClassEmptyResponse},
		{"within the slack", openaitest.Behavior{Usage: `{"completion_tokens":20,"prompt_tokens":7}`}, 4, ""},
		{"integral float", openaitest.Behavior{Usage: `{"completion_tokens":4.0,"prompt_tokens":7e0}`}, 4, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := openaitest.New(tc.b)
			defer srv.Close()
			c, _ := openai.New(openai.Config{BaseURL: srv.BaseURL(), RequireUsage: strings.Contains(tc.name, "required")})
			resp := c.Stream(context.Background(), &openai.Request{Model: "test-model", Prompt: "hi", MaxTokens: tc.max})
			if got := openai.ClassOf(resp.Err); got != tc.want {
				t.Fatalf("class %q (%v), want %q", got, resp.Err, tc.want)
			}
			if tc.want == "" && (resp.CompletionTokens < 0 || resp.PromptTokens < 0) {
				t.Errorf("tokens %d/%d", resp.CompletionTokens, resp.PromptTokens)
			}
		})
	}
}
