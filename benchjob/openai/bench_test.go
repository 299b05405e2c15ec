package openai

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/common/config"
)

// stream builds a completions stream of n token chunks plus usage and [DONE].
func stream(n int) []byte {
	var b bytes.Buffer
	for i := 0; i < n; i++ {
		fin := "null"
		if i == n-1 {
			fin = `"length"`
		}
		fmt.Fprintf(&b, "data: {\"id\":\"cmpl-1\",\"object\":\"text_completion\",\"created\":1700000000,\"model\":\"m\",\"choices\":[{\"index\":0,\"text\":\" word\",\"logprobs\":null,\"finish_reason\":%s,\"stop_reason\":null}],\"usage\":null}\n\n", fin)
	}
	fmt.Fprintf(&b, "data: {\"id\":\"cmpl-1\",\"object\":\"text_completion\",\"created\":1700000000,\"model\":\"m\",\"choices\":[],\"usage\":{\"prompt_tokens\":10,\"total_tokens\":%d,\"completion_tokens\":%d}}\n\n", 10+n, n)
	b.WriteString("data: [DONE]\n\n")
	return b.Bytes()
}

// BenchmarkSSEParse is the SSE framing alone (bytes/s of event-stream).
func BenchmarkSSEParse(b *testing.B) {
	data := stream(256)
	b.SetBytes(int64(len(data)))
	r := NewSSEReader(bytes.NewReader(data), 0)
	br := bytes.NewReader(data)
	b.ReportAllocs()
	for b.Loop() {
		br.Reset(data)
		r.Reset(br)
		for {
			if _, err := r.Next(); err != nil {
				break
			}
		}
	}
}

// BenchmarkStreamDecode is the whole response path (SSE, JSON chunks, timing,
// hashing) of a 256-token stream over an in-memory connection (net.Pipe,
// chunked): the client's own cost.
func BenchmarkStreamDecode(b *testing.B) {
	data := stream(256)
	c := fakeClient(b, string(data), false)
	defer c.Close()
	req := &Request{Model: "m", Prompt: "p", MaxTokens: 256}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if resp := c.Stream(context.Background(), req); resp.Err != nil || resp.CompletionTokens != 256 {
			b.Fatal(resp.Err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/256, "ns/token")
}

// BenchmarkLoopbackShortStreams sends short streamed requests (4 tokens)
// to a loopback server in the same process, 64 in flight: the client's
// request rate on this machine (server included). http-config adds an
// authorization and an X-Scope-OrgID header from the HTTP client config:
// they are in the prebuilt head, so allocs/op stay the same.
func BenchmarkLoopbackShortStreams(b *testing.B) {
	data := stream(4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write(data)
	}))
	defer srv.Close()
	for _, bc := range []struct {
		name string
		http config.HTTPClientConfig
	}{
		{"plain", config.HTTPClientConfig{}},
		{"http-config", config.HTTPClientConfig{Authorization: &config.Authorization{Type: "Bearer", Credentials: "sk-0123456789abcdef"},
			HTTPHeaders: &config.Headers{Headers: map[string]config.Header{"X-Scope-OrgID": {Values: []string{"tenant-a"}}}}}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			c, err := New(Config{BaseURL: srv.URL + "/v1", MaxConns: 256, HTTP: bc.http})
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			req := &Request{Model: "m", Prompt: strings.Repeat("word ", 50), MaxTokens: 4}
			b.SetParallelism(32) // × GOMAXPROCS goroutines in flight
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if resp := c.Stream(context.Background(), req); resp.Err != nil {
						b.Error(resp.Err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
		})
	}
}
