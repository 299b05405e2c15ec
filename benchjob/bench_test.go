package benchjob

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/joulemark/joulemark/benchjob/openai"
	"github.com/joulemark/joulemark/internal/contract"
)

// staticEngine answers every completion with the same short stream (4
// tokens and usage), and /health and /v1/models, as cheaply as possible.
func staticEngine(tb testing.TB) *httptest.Server {
	var body []byte
	for i := 0; i < 4; i++ {
		fin := "null"
		if i == 3 {
			fin = `"length"`
		}
		body = fmt.Appendf(body, "data: {\"id\":\"cmpl-1\",\"object\":\"text_completion\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"text\":\" tok\",\"logprobs\":null,\"finish_reason\":%s}],\"usage\":null}\n\n", fin)
	}
	body = append(body, "data: {\"id\":\"cmpl-1\",\"model\":\"m\",\"choices\":[],\"usage\":{\"prompt_tokens\":30,\"completion_tokens\":4,\"total_tokens\":34}}\n\ndata: [DONE]\n\n"...)
	mux := http.NewServeMux()
	mux.HandleFunc("/health", func(http.ResponseWriter, *http.Request) {})
	mux.HandleFunc("/v1/models", func(w http.ResponseWriter, _ *http.Request) {
		io.WriteString(w, `{"object":"list","data":[{"id":"m","object":"model"}]}`)
	})
	mux.HandleFunc("/v1/completions", func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write(body)
	})
	return httptest.NewServer(mux)
}

var benchTarget = flag.String("bench-target", "", "BenchmarkRunClosedLoop's engine base URL "+
	"(e.g. http://127.0.0.1:18200/v1 of docs/nginx-sse.conf, serving model m); default: a loopback server in the test process")

var benchRemoteWrite = flag.Bool("bench-remote-write", true, "BenchmarkRunClosedLoop pushes its samples to a loopback remote-write receiver "+
	"(whose decoding then counts in cpu-µs/req); false: as joulemark bench without --remote-write-url")

// BenchmarkRunClosedLoop is the whole benchmark job per request (client,
// record, archive line, remote-write samples, aggregates) in a closed loop
// of 64 against a loopback engine in the same process (or -bench-target);
// b.N is the formal request count. cpu-µs/req is the process' user+system
// CPU time per request over the run: with the loopback engine it includes
// the server's share, with -bench-target it is the client's alone.
func BenchmarkRunClosedLoop(b *testing.B) {
	target := *benchTarget
	if target == "" {
		srv := staticEngine(b)
		defer srv.Close()
		target = srv.URL + "/v1"
	}
	cfg := Defaults()
	cfg.Target, cfg.Model = target, "m"
	if *benchRemoteWrite {
		rw := newRWReceiver(&testing.T{})
		defer rw.Close()
		cfg.RemoteWrite.URL = rw.URL
	}
	cfg.Concurrency = 64
	cfg.WarmupRequests = 0
	cfg.Workload.MeanInputTokens, cfg.Workload.StddevInputTokens = 30, 0
	cfg.Workload.MeanOutputTokens, cfg.Workload.StddevOutputTokens = 4, 0
	cfg.Engine.NoLifecycle = true
	cfg.RunsDir = b.TempDir()
	b.ReportAllocs()
	b.ResetTimer()
	cfg.Requests = b.N
	cpu0 := cpuTime()
	res, err := Run(context.Background(), cfg, Options{Progress: io.Discard, PollInterval: 10 * time.Millisecond})
	cpu := cpuTime() - cpu0
	if err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	if res.Summary.Succeeded != b.N {
		b.Fatalf("%d of %d succeeded", res.Summary.Succeeded, b.N)
	}
	b.ReportMetric(res.Summary.RequestsPerSecond, "req/s")
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/req")
}

// BenchmarkRecord is the per-request bookkeeping after the response:
// record, archive line, five samples, aggregates.
func BenchmarkRecord(b *testing.B) {
	srv := staticEngine(b)
	defer srv.Close()
	cfg := Defaults()
	cfg.Target, cfg.Model, cfg.Concurrency, cfg.Requests = srv.URL+"/v1", "m", 1, 1
	cfg.RunID = contract.NewRunID() // as Run gives one
	cfg.Engine.NoLifecycle = true
	cfg.RunsDir = b.TempDir()
	r, err := prepare(context.Background(), cfg, Options{})
	if err != nil {
		b.Fatal(err)
	}
	resp := r.client.Stream(context.Background(), &openaiRequestForBench)
	if resp.Err != nil {
		b.Fatal(resp.Err)
	}
	p := Prompt{Text: "x", MaxTokens: 4}
	b.ReportAllocs()
	for b.Loop() {
		r.record(newRecord("formal", 0, p, resp, time.Time{}))
	}
	r.rec.reqs.Close()
}

var openaiRequestForBench = openai.Request{Model: "m", Prompt: "x", MaxTokens: 4}
