package openai

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"strings"
	"testing"
)

type bodyTransport string

func (b bodyTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/event-stream"}},
		Body: io.NopCloser(strings.NewReader(string(b))), Request: r}, nil
}

// pipeDial is a dialer for the client's own connections whose every
// connection is served by an in-memory HTTP/1.1 server answering each
// request with body as an event stream, chunked in pieces of 64 bytes.
func pipeDial(body string) func(context.Context, string, string) (net.Conn, error) {
	var answer bytes.Buffer
	answer.WriteString("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
	cw := httputil.NewChunkedWriter(&answer)
	for b := body; len(b) > 0; {
		n := min(64, len(b))
		cw.Write([]byte(b[:n]))
		b = b[n:]
	}
	cw.Close()
	answer.WriteString("\r\n")
	return func(context.Context, string, string) (net.Conn, error) {
		cc, sc := net.Pipe()
		go func() {
			defer sc.Close()
			br := bufio.NewReader(sc)
			for {
				req, err := http.ReadRequest(br)
				if err != nil {
					return
				}
				_, _ = io.Copy(io.Discard, req.Body)
				if _, err := sc.Write(answer.Bytes()); err != nil {
					return
				}
			}
		}()
		return cc, nil
	}
}

// fakeClient is a client whose stream requests all get body: over its own
// connections (pipeDial), or through net/http (bodyTransport) when viaHTTP.
func fakeClient(tb testing.TB, body string, viaHTTP bool) *Client {
	c, err := New(Config{BaseURL: "http://fake.invalid/v1"})
	if err != nil {
		tb.Fatal(err)
	}
	c.http.Transport = bodyTransport(body)
	if viaHTTP {
		c.conns = nil
	} else {
		c.conns.dial = pipeDial(body)
	}
	return c
}

// FuzzStream feeds arbitrary bodies through the whole response path: it
// must never panic, and a success must be internally consistent.
func FuzzStream(f *testing.F) {
	f.Add("data: {\"model\":\"m\",\"choices\":[{\"text\":\"a\",\"finish_reason\":null}]}\n\ndata: {\"choices\":[],\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":1}}\n\ndata: [DONE]\n\n")
	f.Add("data: {\"choices\":[{\"delta\":{\"reasoning_content\":\"x\"},\"finish_reason\":\"stop\"}]}\n\n")
	f.Add("data: {\"error\":{\"message\":\"boom\"}}\n\n")
	f.Add("data: {\"choices\": [oops\n\n")
	f.Add("event: error\ndata: x\n\n")
	// usage sequences: lowered, zero for content, absurd prompt count
	f.Add("data: {\"choices\":[{\"text\":\"a\"}]}\n\ndata: {\"usage\":{\"completion_tokens\":8}}\n\ndata: {\"usage\":{\"completion_tokens\":1}}\n\ndata: [DONE]\n\n")
	f.Add("data: {\"choices\":[{\"text\":\"a\"}]}\n\ndata: {\"usage\":{\"completion_tokens\":0}}\n\ndata: [DONE]\n\n")
	f.Add("data: {\"choices\":[{\"text\":\"a\"}]}\n\ndata: {\"usage\":{\"prompt_tokens\":16777216,\"completion_tokens\":1}}\n\ndata: [DONE]\n\n")
	f.Fuzz(func(t *testing.T, body string) {
		var got [2]*Response
		for i, viaHTTP := range []bool{false, true} {
			c := fakeClient(t, body, viaHTTP)
			resp := c.Stream(context.Background(), &Request{Model: "m", Prompt: "p"})
			c.Close()
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
				if resp.UsageReported && (resp.PromptTokens > len("p")+PromptTemplateSlack || (resp.Chunks > 0 && resp.CompletionTokens == 0)) {
					t.Fatalf("usage %d prompt, %d completion tokens for %d chunks taken", resp.PromptTokens, resp.CompletionTokens, resp.Chunks)
				}
			} else if ClassOf(resp.Err) == "" {
				t.Fatalf("error without class: %v", resp.Err)
			}
			got[i] = resp
		}
		// Both transports see the same stream.
		a, b := got[0], got[1]
		if ClassOf(a.Err) != ClassOf(b.Err) || a.Chunks != b.Chunks || a.TextSHA256 != b.TextSHA256 ||
			a.CompletionTokens != b.CompletionTokens || a.FinishReason != b.FinishReason || a.Model != b.Model {
			t.Fatalf("own connections: %+v\nnet/http: %+v", a, b)
		}
	})
}
