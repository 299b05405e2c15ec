package simengine

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/joulemark/joulemark/internal/gpu"
)

// fastConfig is a millisecond-scale engine for tests.
func fastConfig() Config {
	c := DefaultConfig()
	c.Model = "test-model"
	c.MaxModelLen = 4096
	c.MaxBatch = 16
	c.KVCacheTokens = 1 << 16
	c.PrefillPerToken = 10 * time.Microsecond
	c.DecodeBase = time.Millisecond
	c.DecodePerSeq = 100 * time.Microsecond
	c.EOSMeanTokens = 0
	c.StartupDelay = 0
	c.ShutdownDelay = 0
	c.Seed = 42
	return c
}

// startEngine starts a ready engine behind an httptest server; both stop at
// the end of the test.
func startEngine(t testing.TB, mutate func(*Config), sinks ...LoadSink) (*Engine, *httptest.Server) {
	t.Helper()
	cfg := fastConfig()
	if mutate != nil {
		mutate(&cfg)
	}
	e, err := New(cfg, sinks...)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(e.Handler(nil))
	t.Cleanup(func() {
		srv.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := e.Stop(ctx); err != nil {
			t.Errorf("stop: %v", err)
		}
	})
	return e, srv
}

// post sends body as JSON and returns the response; the caller closes it.
func post(t testing.TB, ctx context.Context, url string, body any) *http.Response {
	t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// sseResult is one streamed response, read the way a benchmark client does.
type sseResult struct {
	events    []string // the data payloads, [DONE] included
	sent      time.Time
	firstTok  time.Time // first chunk with non-empty text or content
	end       time.Time
	readErr   error // a cut stream shows up here
	text      string
	finish    string
	usage     *usage
	chunkIDs  map[string]bool
	chunksTok int         // chunks carrying text
	tokTimes  []time.Time // arrival of each chunk carrying text
}

// readSSE reads an event stream to its end. Lines must be "data: ..." or
// blank; anything else fails the test.
func readSSE(t testing.TB, resp *http.Response, sent time.Time) sseResult {
	t.Helper()
	defer resp.Body.Close()
	res := sseResult{sent: sent, chunkIDs: map[string]bool{}}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		t.Fatalf("content type %q, want text/event-stream", ct)
	}
	sc := bufio.NewScanner(resp.Body)
	var pendingBlank bool
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			pendingBlank = false
			continue
		}
		if pendingBlank {
			t.Fatalf("event without blank line separator before %q", line)
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			t.Fatalf("line %q is not a data line", line)
		}
		pendingBlank = true
		res.events = append(res.events, data)
		if data == "[DONE]" {
			continue
		}
		var c struct {
			ID      string `json:"id"`
			Choices []struct {
				Text  string `json:"text"`
				Delta struct {
					Content string `json:"content"`
				} `json:"delta"`
				FinishReason *string `json:"finish_reason"`
			} `json:"choices"`
			Usage *usage `json:"usage"`
		}
		if err := json.Unmarshal([]byte(data), &c); err != nil {
			t.Fatalf("chunk %q: %v", data, err)
		}
		res.chunkIDs[c.ID] = true
		if c.Usage != nil {
			res.usage = c.Usage
		}
		for _, ch := range c.Choices {
			txt := ch.Text + ch.Delta.Content
			if txt != "" {
				now := time.Now()
				if res.firstTok.IsZero() {
					res.firstTok = now
				}
				res.chunksTok++
				res.tokTimes = append(res.tokTimes, now)
			}
			res.text += txt
			if ch.FinishReason != nil {
				res.finish = *ch.FinishReason
			}
		}
	}
	res.readErr = sc.Err()
	res.end = time.Now()
	return res
}

func (r sseResult) done() bool { return len(r.events) > 0 && r.events[len(r.events)-1] == "[DONE]" }

func (r sseResult) ttft() time.Duration { return r.firstTok.Sub(r.sent) }

// tpot is (latency - ttft) / (tokens - 1).
func (r sseResult) tpot() time.Duration {
	if r.chunksTok < 2 {
		return 0
	}
	return r.end.Sub(r.firstTok) / time.Duration(r.chunksTok-1)
}

// streamN sends n streaming completions at once and returns their results.
func streamN(t testing.TB, url string, n int, body map[string]any) []sseResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out := make([]sseResult, n)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	for i := range n {
		wg.Go(func() {
			b, _ := json.Marshal(body)
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url+"/v1/completions", bytes.NewReader(b))
			sent := time.Now()
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
				return
			}
			if resp.StatusCode != http.StatusOK {
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				mu.Lock()
				errs = append(errs, fmt.Errorf("status %d: %s", resp.StatusCode, b))
				mu.Unlock()
				return
			}
			out[i] = readSSE(t, resp, sent)
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	return out
}

// recordingSink records what the engine tells the GPUs.
type recordingSink struct {
	mu     sync.Mutex
	loads  []float64
	states []gpu.EngineState
}

func (r *recordingSink) SetLoad(l float64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.loads = append(r.loads, l)
}

func (r *recordingSink) SetEngineState(s gpu.EngineState) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.states = append(r.states, s)
}

func (r *recordingSink) snapshot() ([]float64, []gpu.EngineState) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]float64(nil), r.loads...), append([]gpu.EngineState(nil), r.states...)
}
