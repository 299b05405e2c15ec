package simengine

import (
	"context"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/joulemark/joulemark/internal/contract"
	"github.com/joulemark/joulemark/internal/gpu"
)

func TestBatchingSlowsDecode(t *testing.T) {
	// A step of 1 ms + 4 ms per decoding sequence: alone ≈ 5 ms per token,
	// eight together ≈ 33 ms per token.
	_, srv := startEngine(t, func(c *Config) {
		c.DecodeBase = time.Millisecond
		c.DecodePerSeq = 4 * time.Millisecond
	})
	body := map[string]any{"prompt": "a b c", "max_tokens": 20, "ignore_eos": true, "stream": true}
	alone := streamN(t, srv.URL, 1, body)[0]
	batch := streamN(t, srv.URL, 8, body)
	var sum time.Duration
	for _, r := range batch {
		sum += r.tpot()
	}
	batchTPOT := sum / time.Duration(len(batch))
	if alone.tpot() < 4*time.Millisecond {
		t.Errorf("alone: TPOT %s, below the model's 5 ms step", alone.tpot())
	}
	if batchTPOT < 3*alone.tpot() {
		t.Errorf("batch of 8: TPOT %s, alone %s; want decode to slow with batch size (model: 33 ms vs 5 ms)", batchTPOT, alone.tpot())
	}
}

func TestPrefillProportionalToPrompt(t *testing.T) {
	// 100 µs per prompt token: a 1000-token prompt adds 100 ms to TTFT.
	_, srv := startEngine(t, func(c *Config) { c.PrefillPerToken = 100 * time.Microsecond })
	short := streamN(t, srv.URL, 1, map[string]any{"prompt": "a", "max_tokens": 2, "stream": true})[0]
	long := streamN(t, srv.URL, 1, map[string]any{"prompt": strings.Repeat("a ", 1000), "max_tokens": 2, "stream": true})[0]
	if d := long.ttft() - short.ttft(); d < 90*time.Millisecond {
		t.Errorf("TTFT short %s long %s: difference %s, want >= 90 ms (1000 tokens × 100 µs)", short.ttft(), long.ttft(), d)
	}
}

func TestQueueingAtMaxBatch(t *testing.T) {
	// Two sequences at a time, 20 tokens of 5 ms: the last two of four wait
	// for the first two to finish (≈ 100 ms).
	e, srv := startEngine(t, func(c *Config) {
		c.MaxBatch = 2
		c.DecodeBase = 5 * time.Millisecond
		c.DecodePerSeq = 0
	})
	sawWaiting := make(chan float64, 1)
	stop := make(chan struct{})
	go func() {
		maxW := 0.0
		for {
			select {
			case <-stop:
				sawWaiting <- maxW
				return
			case <-time.After(2 * time.Millisecond):
				e.mu.Lock()
				maxW = max(maxW, float64(len(e.waiting)))
				if len(e.running) > 2 {
					t.Errorf("%d sequences running, max batch 2", len(e.running))
				}
				e.mu.Unlock()
			}
		}
	}()
	res := streamN(t, srv.URL, 4, map[string]any{"prompt": "a", "max_tokens": 20, "ignore_eos": true, "stream": true})
	close(stop)
	if w := <-sawWaiting; w < 1 {
		t.Errorf("never saw a waiting request")
	}
	ttfts := make([]time.Duration, len(res))
	for i, r := range res {
		ttfts[i] = r.ttft()
	}
	sort.Slice(ttfts, func(i, j int) bool { return ttfts[i] < ttfts[j] })
	if ttfts[2] < 80*time.Millisecond || ttfts[1] > 50*time.Millisecond {
		t.Errorf("TTFTs %v: want two fast and two queued behind 20 steps of 5 ms", ttfts)
	}
}

// TestKVCachePreempts: two sequences of 10 + 80 tokens (6 blocks each)
// in a cache of 8 blocks are both admitted (their prompts fit), then the
// cache fills as they decode: the later one is preempted, waits, is
// recomputed, and both still stream all their tokens once.
func TestKVCachePreempts(t *testing.T) {
	e, srv := startEngine(t, func(c *Config) {
		c.MaxModelLen = 100
		c.KVCacheTokens = 8 * KVBlockSize
		c.DecodeBase = 2 * time.Millisecond
	})
	body := map[string]any{"prompt": strings.Repeat("a ", 10), "max_tokens": 80, "ignore_eos": true, "stream": true}
	done := make(chan []sseResult)
	go func() { done <- streamN(t, srv.URL, 2, body) }()
	deadline := time.Now().Add(10 * time.Second)
	var peak float64
	sawWaiting := false
	for time.Now().Before(deadline) {
		e.mu.Lock()
		usage := float64(e.kvBlocks) / float64(e.kvCapacity())
		sawWaiting = sawWaiting || len(e.waiting) > 0 && len(e.running) == 1
		e.mu.Unlock()
		if usage > 1 {
			t.Fatalf("KV cache usage %.2f over 1", usage)
		}
		peak = max(peak, usage)
		select {
		case res := <-done:
			for i, r := range res {
				if r.chunksTok != 80 || !r.done() {
					t.Errorf("request %d: %d tokens, done %v", i, r.chunksTok, r.done())
				}
			}
			if got := testutil.ToFloat64(e.m.preemptions); got < 1 {
				t.Errorf("%g preemptions, want at least 1", got)
			}
			if peak < 0.99 || !sawWaiting {
				t.Errorf("peak KV cache usage %.2f (want full), a preempted sequence seen waiting: %v", peak, sawWaiting)
			}
			return
		case <-time.After(time.Millisecond):
		}
	}
	t.Fatal("requests did not finish")
}

func TestEOSAndMinTokens(t *testing.T) {
	_, srv := startEngine(t, func(c *Config) { c.EOSMeanTokens = 5 })
	res := streamN(t, srv.URL, 20, map[string]any{"prompt": "a", "max_tokens": 40, "stream": true})
	stops := 0
	for _, r := range res {
		n := r.chunksTok
		switch r.finish {
		case "stop":
			stops++
			if n >= 40 {
				t.Errorf("finish stop with %d tokens", n)
			}
		case "length":
			if n != 40 {
				t.Errorf("finish length with %d tokens", n)
			}
		default:
			t.Errorf("finish %q", r.finish)
		}
	}
	if stops < 15 {
		t.Errorf("%d of 20 stopped at EOS with mean 5 of max 40", stops)
	}
	res = streamN(t, srv.URL, 20, map[string]any{"prompt": "a", "max_tokens": 40, "min_tokens": 12, "stream": true})
	for _, r := range res {
		if r.chunksTok < 12 {
			t.Errorf("min_tokens 12: got %d tokens", r.chunksTok)
		}
	}
	res = streamN(t, srv.URL, 5, map[string]any{"prompt": "a", "max_tokens": 40, "ignore_eos": true, "stream": true})
	for _, r := range res {
		if r.chunksTok != 40 || r.finish != "length" {
			t.Errorf("ignore_eos: %d tokens, finish %q", r.chunksTok, r.finish)
		}
	}
}

func TestSeedMakesTextDeterministic(t *testing.T) {
	_, srv := startEngine(t, nil)
	body := map[string]any{"prompt": "a", "max_tokens": 10, "seed": 7, "stream": true}
	a := streamN(t, srv.URL, 1, body)[0]
	b := streamN(t, srv.URL, 1, body)[0]
	body["seed"] = 8
	c := streamN(t, srv.URL, 1, body)[0]
	if a.text != b.text || a.text == c.text {
		t.Errorf("seed 7: %q and %q; seed 8: %q", a.text, b.text, c.text)
	}
}

func TestLifecycle(t *testing.T) {
	sink := &recordingSink{}
	cfg := fastConfig()
	cfg.StartupDelay = 150 * time.Millisecond
	cfg.ShutdownDelay = 50 * time.Millisecond
	e, err := New(cfg, sink)
	if err != nil {
		t.Fatal(err)
	}
	srv := newServer(t, e)
	health := func() int {
		resp, err := http.Get(srv.URL + "/health")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if c := health(); c != http.StatusServiceUnavailable {
		t.Errorf("stopped: /health %d", c)
	}
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	if err := e.Start(); err == nil {
		t.Error("second Start: no error")
	}
	if c := health(); c != http.StatusServiceUnavailable {
		t.Errorf("loading: /health %d", c)
	}
	resp := post(t, context.Background(), srv.URL+"/v1/completions", map[string]any{"prompt": "a"})
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("loading: request answered %d %s", resp.StatusCode, b)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := e.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	if c := health(); c != http.StatusOK {
		t.Errorf("running: /health %d", c)
	}
	if r := streamN(t, srv.URL, 1, map[string]any{"prompt": "a", "max_tokens": 3, "stream": true})[0]; !r.done() {
		t.Error("running: stream not done")
	}
	stopStart := time.Now()
	if err := e.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(stopStart); d < 50*time.Millisecond {
		t.Errorf("stop took %s, shutdown delay 50 ms", d)
	}
	if c := health(); c != http.StatusServiceUnavailable {
		t.Errorf("stopped: /health %d", c)
	}
	_, states := sink.snapshot()
	want := []gpu.EngineState{gpu.EngineLoading, gpu.EngineRunning, gpu.EngineStopped}
	if len(states) != len(want) {
		t.Fatalf("sink states %v, want %v", states, want)
	}
	for i := range want {
		if states[i] != want[i] {
			t.Fatalf("sink states %v, want %v", states, want)
		}
	}
	short, cancelShort := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancelShort()
	if err := e.WaitReady(short); err == nil {
		t.Error("WaitReady on a stopped engine returned at once")
	}
	// A stopped engine starts again.
	if err := e.Start(); err != nil {
		t.Fatalf("restart: %v", err)
	}
	if err := e.Stop(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestStopAbortsInFlight(t *testing.T) {
	e, srv := startEngine(t, func(c *Config) { c.DecodeBase = 5 * time.Millisecond })
	done := make(chan sseResult)
	go func() {
		done <- streamN(t, srv.URL, 1, map[string]any{"prompt": "a", "max_tokens": 1000, "ignore_eos": true, "stream": true})[0]
	}()
	time.Sleep(50 * time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := e.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.finish != "abort" || !r.done() || r.chunksTok >= 1000 {
		t.Errorf("aborted stream: finish %q, done %v, %d tokens", r.finish, r.done(), r.chunksTok)
	}
}

func TestLoadSinkFollowsBatch(t *testing.T) {
	sink := &recordingSink{}
	e, srv := startEngine(t, func(c *Config) {
		c.MaxBatch = 8
		c.DecodeBase = 3 * time.Millisecond
	}, sink)
	cfg := e.Config()
	// A decode step of the four sequences: the power model's load.
	want := cfg.Power.Load(0, 4, cfg.DecodeBase+4*cfg.DecodePerSeq)
	streamN(t, srv.URL, 4, map[string]any{"prompt": "a", "max_tokens": 30, "ignore_eos": true, "stream": true})
	deadline := time.Now().Add(2 * time.Second)
	for {
		loads, _ := sink.snapshot()
		if len(loads) > 0 && loads[len(loads)-1] == 0 {
			seen := false
			for _, l := range loads {
				seen = seen || math.Abs(l-want) < 1e-12
				if l < 0 || l > 1 {
					t.Errorf("load %g outside [0, 1]", l)
				}
			}
			if !seen {
				t.Errorf("loads %v: no decode step of 4 sequences (load %g)", loads, want)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("load never went back to 0: %v", loads)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestClientCancelFreesBatch(t *testing.T) {
	e, srv := startEngine(t, func(c *Config) { c.DecodeBase = 5 * time.Millisecond })
	ctx, cancel := context.WithCancel(context.Background())
	resp := post(t, ctx, srv.URL+"/v1/completions", map[string]any{"prompt": "a b", "max_tokens": 1000, "ignore_eos": true, "stream": true})
	buf := make([]byte, 64)
	if _, err := resp.Body.Read(buf); err != nil {
		t.Fatal(err)
	}
	cancel()
	resp.Body.Close()
	deadline := time.Now().Add(2 * time.Second)
	for {
		e.mu.Lock()
		n, kv := len(e.running), e.kvBlocks
		e.mu.Unlock()
		if n == 0 && kv == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after cancel: %d running, %d KV blocks", n, kv)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestMetrics(t *testing.T) {
	e, srv := startEngine(t, nil)
	streamN(t, srv.URL, 3, map[string]any{"prompt": "one two three four", "max_tokens": 5, "ignore_eos": true, "stream": true})
	// The step that produced the last tokens has ended; wait for the loop
	// to publish idle.
	deadline := time.Now().Add(2 * time.Second)
	for e.Load() != 0 && time.Now().Before(deadline) {
		time.Sleep(2 * time.Millisecond)
	}
	expected := `
# HELP joulemark_sim_engine_load_ratio Power the current step draws on each of the engine's GPUs, as a share of the GPU's range above idle (the sim GPUs' load; 0 when idle).
# TYPE joulemark_sim_engine_load_ratio gauge
joulemark_sim_engine_load_ratio 0
# HELP joulemark_sim_engine_state Engine state: 0 stopped, 1 loading weights, 2 running.
# TYPE joulemark_sim_engine_state gauge
joulemark_sim_engine_state 2
# HELP vllm:generation_tokens_total Number of generation tokens processed.
# TYPE vllm:generation_tokens_total counter
vllm:generation_tokens_total{model_name="test-model"} 15
# HELP vllm:prompt_tokens_total Number of prefill tokens processed.
# TYPE vllm:prompt_tokens_total counter
vllm:prompt_tokens_total{model_name="test-model"} 12
# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{model_name="test-model"} 0
# HELP vllm:num_requests_waiting Number of requests waiting to be processed.
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{model_name="test-model"} 0
# HELP vllm:kv_cache_usage_perc KV-cache usage. 1 means 100 percent usage.
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{model_name="test-model"} 0
# HELP vllm:gpu_cache_usage_perc GPU KV-cache usage. 1 means 100 percent usage (vLLM < 0.10 name).
# TYPE vllm:gpu_cache_usage_perc gauge
vllm:gpu_cache_usage_perc{model_name="test-model"} 0
# HELP vllm:request_success_total Count of successfully processed requests.
# TYPE vllm:request_success_total counter
vllm:request_success_total{finished_reason="length",model_name="test-model"} 3
vllm:request_success_total{finished_reason="stop",model_name="test-model"} 0
`
	names := []string{"joulemark_sim_engine_load_ratio", "joulemark_sim_engine_state", "vllm:generation_tokens_total",
		"vllm:prompt_tokens_total", "vllm:num_requests_running", "vllm:num_requests_waiting",
		"vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc", "vllm:request_success_total"}
	if err := testutil.ScrapeAndCompare(srv.URL+"/metrics", strings.NewReader(expected), names...); err != nil {
		t.Error(err)
	}
	if n, err := testutil.GatherAndCount(e.Registry(), "vllm:time_to_first_token_seconds"); err != nil || n != 1 {
		t.Errorf("ttft histogram: %d series, %v", n, err)
	}
}

// newServer serves e on a test server stopped with the test.
func newServer(t *testing.T, e *Engine) *httptest.Server {
	t.Helper()
	s := httptest.NewServer(e.Handler(nil))
	t.Cleanup(s.Close)
	return s
}

func TestChunkedPrefill(t *testing.T) {
	// A 400-token prompt at 0.5 ms per token is 200 ms of prefill. With a
	// budget of 100 tokens per step it is spread over four steps of about
	// 50 ms, so a sequence already decoding keeps getting a token every
	// ~55 ms instead of stalling 200 ms.
	_, srv := startEngine(t, func(c *Config) {
		c.MaxNumBatchedTokens = 100
		c.PrefillPerToken = 500 * time.Microsecond
		c.DecodeBase = 2 * time.Millisecond
	})
	decoding := make(chan sseResult)
	go func() {
		decoding <- streamN(t, srv.URL, 1, map[string]any{"prompt": "a", "max_tokens": 150, "ignore_eos": true, "stream": true})[0]
	}()
	time.Sleep(50 * time.Millisecond)
	long := streamN(t, srv.URL, 1, map[string]any{"prompt": strings.Repeat("w ", 400), "max_tokens": 2, "stream": true})[0]
	d := <-decoding
	if long.ttft() < 190*time.Millisecond {
		t.Errorf("long prompt TTFT %s, want >= 200 ms of prefill", long.ttft())
	}
	var maxGap time.Duration
	for i := 1; i < len(d.tokTimes); i++ {
		maxGap = max(maxGap, d.tokTimes[i].Sub(d.tokTimes[i-1]))
	}
	if maxGap > 150*time.Millisecond {
		t.Errorf("decoding sequence stalled %s during the other's prefill; chunks of 100 tokens take ~50 ms", maxGap)
	}
}

// TestSGLangDialect: with Dialect sglang /metrics speaks SGLang's names
// and no vLLM name.
func TestSGLangDialect(t *testing.T) {
	e, srv := startEngine(t, func(c *Config) { c.Dialect = contract.EngineSGLang })
	streamN(t, srv.URL, 2, map[string]any{"prompt": "a b c", "max_tokens": 5, "ignore_eos": true, "stream": true})
	checkDialectNames(t, e, contract.EngineSGLang)
	if v := testutil.ToFloat64(e.m.generationTokens); v != 10 {
		t.Errorf("sglang:generation_tokens_total %g, want 10", v)
	}
	if _, err := New(func() Config { c := fastConfig(); c.Dialect = "tgi"; return c }()); err == nil {
		t.Error("dialect tgi accepted")
	}
}

// TestVLLMDialect: with Dialect vllm /metrics speaks vLLM's names of the
// contract, and no other engine name.
func TestVLLMDialect(t *testing.T) {
	e, srv := startEngine(t, func(c *Config) { c.Dialect = contract.EngineVLLM })
	streamN(t, srv.URL, 1, map[string]any{"prompt": "a b c", "max_tokens": 5, "ignore_eos": true, "stream": true})
	checkDialectNames(t, e, contract.EngineVLLM)
}

// checkDialectNames compares the engine names the registry gathers (those
// with an engine prefix, "engine:") with internal/contract's names of the
// dialect, both ways, and their types.
func checkDialectNames(t *testing.T, e *Engine, dialect string) {
	t.Helper()
	mfs, err := e.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for _, m := range contract.EngineMetricsOf(dialect) {
		want[m.Name] = m.Type
	}
	if len(want) == 0 {
		t.Fatalf("internal/contract has no %s name", dialect)
	}
	got := map[string]bool{}
	for _, mf := range mfs {
		name := mf.GetName()
		if !strings.Contains(name, ":") {
			continue // the simulator's own joulemark_sim_engine_*
		}
		got[name] = true
		typ, ok := want[name]
		switch {
		case !ok:
			t.Errorf("the %s dialect publishes %s, which is not one of internal/contract's %s names", dialect, name, dialect)
		case !strings.EqualFold(mf.GetType().String(), typ):
			t.Errorf("%s is a %s, internal/contract says %s", name, mf.GetType(), typ)
		}
	}
	for n := range want {
		if !got[n] {
			t.Errorf("the %s dialect does not publish internal/contract's %s", dialect, n)
		}
	}
}
