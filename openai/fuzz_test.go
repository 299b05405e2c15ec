package openai

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
)

type bodyTransport string

func (b bodyTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/event-stream"}},
		Body: io.NopCloser(strings.NewReader(string(b))), Request: r}, nil
}

// FuzzStream feeds arbitrary bodies through the whole response path: it
// must never panic, and a success must be internally consistent.
func FuzzStream(f *testing.F) {
	f.Add("data: {\"model\":\"m\",\"choices\":[{\"text\":\"a\",\"finish_reason\":null}]}\n\ndata: {\"choices\":[],\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":1}}\n\ndata: [DONE]\n\n")
	f.Add("data: {\"choices\":[{\"delta\":{\"reasoning_content\":\"x\"},\"finish_reason\":\"stop\"}]}\n\n")
	f.Add("data: {\"error\":{\"message\":\"boom\"}}\n\n")
	f.Add("data: {\"choices\": [oops\n\n")
	f.Add("event: error\ndata: x\n\n")
	f.Fuzz(func(t *testing.T, body string) {
		c, err := New(Config{BaseURL: "http://fuzz.invalid/v1"})
		if err != nil {
			t.Fatal(err)
		}
		c.http.Transport = bodyTransport(body)
		resp := c.Stream(context.Background(), &Request{Model: "m", Prompt: "p"})
		if resp.End.Before(resp.Send) {
			t.Fatal("end before send")
		}
		if resp.Err == nil {
			if resp.FinishReason == "" && !strings.Contains(body, "[DONE]") {
				t.Fatal("success without [DONE] or finish_reason")
			}
			if len(resp.ITL) != max(0, resp.Chunks-1) {
				t.Fatalf("%d gaps for %d chunks", len(resp.ITL), resp.Chunks)
			}
		} else if ClassOf(resp.Err) == "" {
			t.Fatalf("error without class: %v", resp.Err)
		}
	})
}
