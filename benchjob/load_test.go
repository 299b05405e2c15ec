package benchjob

import (
	"context"
	"math"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/joulemark/joulemark/benchjob/openai/openaitest"
	"github.com/joulemark/joulemark/internal/contract"
	"github.com/joulemark/joulemark/internal/runarchive"
)

func maxOverlap(recs []runarchive.Request) int {
	type ev struct {
		t float64
		d int
	}
	var evs []ev
	for _, r := range recs {
		evs = append(evs, ev{r.SendTime, 1}, ev{r.EndTime, -1})
	}
	sort.Slice(evs, func(i, j int) bool {
		if evs[i].t == evs[j].t {
			return evs[i].d < evs[j].d
		}
		return evs[i].t < evs[j].t
	})
	cur, best := 0, 0
	for _, e := range evs {
		cur += e.d
		best = max(best, cur)
	}
	return best
}

func formal(recs []runarchive.Request) []runarchive.Request {
	var out []runarchive.Request
	for _, r := range recs {
		if r.Phase == "formal" {
			out = append(out, r)
		}
	}
	return out
}

func TestRunClosedLoopConcurrency(t *testing.T) {
	srv := openaitest.New(openaitest.Behavior{FirstTokenDelay: 5 * time.Millisecond})
	defer srv.Close()
	cfg := testConfig(t, srv.BaseURL())
	cfg.Concurrency = 4
	cfg.Requests = 40
	res, err := runFake(cfg)
	if err != nil {
		t.Fatal(err)
	}
	_, recs := readRecords(t, res.ArchiveDir)
	f := formal(recs)
	if len(f) != 40 || maxOverlap(f) != 4 {
		t.Errorf("%d formal records, max overlap %d (want 40, 4)", len(f), maxOverlap(f))
	}
	for _, r := range f {
		if r.ScheduledTime != nil {
			t.Error("closed loop records carry a schedule")
		}
	}
}

func TestRunDurationBound(t *testing.T) {
	srv := openaitest.New(openaitest.Behavior{FirstTokenDelay: 10 * time.Millisecond})
	defer srv.Close()
	cfg := testConfig(t, srv.BaseURL())
	cfg.Requests = 0
	cfg.Duration = 200 * time.Millisecond
	cfg.WarmupRequests = 0
	res, err := runFake(cfg)
	if err != nil {
		t.Fatal(err)
	}
	_, recs := readRecords(t, res.ArchiveDir)
	first, last := recs[0].SendTime, 0.0
	for _, r := range recs {
		first, last = math.Min(first, r.SendTime), math.Max(last, r.SendTime)
	}
	if last-first > 0.25 || len(recs) < 5 { // no send after the bound (plus scheduling slack)
		t.Errorf("%d requests, sends over %.3fs (bound 0.2s)", len(recs), last-first)
	}
	for _, r := range recs {
		if !r.Success {
			t.Errorf("in-flight requests at the bound must drain, not fail: %+v", r)
		}
	}
}

func TestRunOpenLoopPoisson(t *testing.T) {
	srv := openaitest.New(openaitest.Behavior{})
	defer srv.Close()
	run := func(burst float64) (*Result, []runarchive.Request) {
		cfg := testConfig(t, srv.BaseURL())
		cfg.Concurrency = 0
		cfg.Rate = 200
		cfg.Burstiness = burst
		cfg.Requests = 100
		cfg.Workload.Seed = 5
		cfg.MaxLag = time.Second
		res, err := runFake(cfg)
		if err != nil {
			t.Fatal(err)
		}
		_, recs := readRecords(t, res.ArchiveDir)
		return res, formal(recs)
	}
	res, f := run(0)
	if len(f) != 100 {
		t.Fatalf("%d formal records", len(f))
	}
	sort.Slice(f, func(i, j int) bool { return *f[i].ScheduledTime < *f[j].ScheduledTime })
	var gaps []float64
	for i, r := range f {
		if r.SendTime < *r.ScheduledTime-1e-6 {
			t.Errorf("record %d sent %.6f before its schedule %.6f", i, r.SendTime, *r.ScheduledTime)
		}
		if i > 0 {
			gaps = append(gaps, *r.ScheduledTime-*f[i-1].ScheduledTime)
		}
	}
	mean, sd := meanSD(gaps)
	// Exponential gaps: mean 5ms, CV 1 (loose bounds for 99 draws).
	if math.Abs(mean-0.005) > 0.0015 || sd/mean < 0.7 || sd/mean > 1.3 {
		t.Errorf("gaps mean %.4f cv %.2f", mean, sd/mean)
	}
	// The achieved rate is wall-clock: on a loaded machine (CI runs every
	// package at once) the 0.5 s phase stretches, so only its upper bound
	// is the schedule's; the schedule itself is checked above.
	if res.TargetRate != 200 || res.AchievedRate <= 0 || res.AchievedRate > 280 || slices.Contains(res.Flags, contract.FlagClientLag) {
		t.Errorf("target %g achieved %g flags %v", res.TargetRate, res.AchievedRate, res.Flags)
	}
	var man runarchive.Manifest
	readJSON(t, filepath.Join(res.ArchiveDir, runarchive.ManifestFile), &man)
	if man.Load.Mode != "poisson" || man.Load.TargetRate != 200 || man.Load.AchievedRate != res.AchievedRate {
		t.Errorf("manifest load %+v", man.Load)
	}

	// Gamma with shape 0.25: burstier (CV = 2).
	_, g := run(0.25)
	sort.Slice(g, func(i, j int) bool { return *g[i].ScheduledTime < *g[j].ScheduledTime })
	gaps = gaps[:0]
	for i := 1; i < len(g); i++ {
		gaps = append(gaps, *g[i].ScheduledTime-*g[i-1].ScheduledTime)
	}
	if gm, gsd := meanSD(gaps); gsd/gm < 1.4 {
		t.Errorf("gamma(0.25) gaps cv %.2f, want about 2", gsd/gm)
	}
}

func meanSD(v []float64) (float64, float64) {
	var s, s2 float64
	for _, x := range v {
		s += x
		s2 += x * x
	}
	m := s / float64(len(v))
	return m, math.Sqrt(s2/float64(len(v)) - m*m)
}

func TestRunOpenLoopCap(t *testing.T) {
	srv := openaitest.New(openaitest.Behavior{FirstTokenDelay: 20 * time.Millisecond})
	defer srv.Close()
	cfg := testConfig(t, srv.BaseURL())
	cfg.Concurrency = 0
	cfg.Rate = 1000
	cfg.MaxConcurrency = 2
	cfg.Requests = 20
	cfg.MaxLag = time.Second
	res, err := runFake(cfg)
	if err != nil {
		t.Fatal(err)
	}
	_, recs := readRecords(t, res.ArchiveDir)
	f := formal(recs)
	if len(f) != 20 || maxOverlap(f) > 2 {
		t.Errorf("%d records, max overlap %d (cap 2)", len(f), maxOverlap(f))
	}
	if res.AchievedRate > 200 {
		t.Errorf("achieved %g req/s through a cap of 2 × 20ms", res.AchievedRate)
	}
	var man runarchive.Manifest
	readJSON(t, filepath.Join(res.ArchiveDir, runarchive.ManifestFile), &man)
	if man.Load.CapWaitSeconds <= 0 || slices.Contains(res.Flags, contract.FlagClientLag) {
		t.Errorf("cap wait %g flags %v: waiting for the cap is not client lag", man.Load.CapWaitSeconds, res.Flags)
	}
}

func TestRunLagFlag(t *testing.T) {
	srv := openaitest.New(openaitest.Behavior{})
	defer srv.Close()
	cfg := testConfig(t, srv.BaseURL())
	cfg.Concurrency = 0
	cfg.Rate = 500
	cfg.Requests = 20
	cfg.MaxLag = time.Nanosecond // any lag at all
	res, err := runFake(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(res.Flags, contract.FlagClientLag) {
		t.Errorf("flags %v: a lag above max_lag must be flagged", res.Flags)
	}
	// The manifest carries the limit beside the lag: analyze's diagnosis
	// judges the flag on them.
	var man runarchive.Manifest
	readJSON(t, filepath.Join(res.ArchiveDir, runarchive.ManifestFile), &man)
	if man.Load.MaxLagSeconds != 1e-9 || man.Load.LagP99Seconds <= man.Load.MaxLagSeconds {
		t.Errorf("manifest load %+v: want max_lag_seconds 1e-9 below lag_p99_seconds", man.Load)
	}
}

func TestRunTraceReplay(t *testing.T) {
	srv := openaitest.New(openaitest.Behavior{})
	defer srv.Close()
	srv.KeepBodies()
	cfg := testConfig(t, srv.BaseURL())
	cfg.Concurrency = 0
	cfg.Requests = 0
	cfg.Workload.Trace = filepath.Join("testdata", "trace.jsonl")
	cfg.MaxLag = time.Second
	res, err := runFake(cfg)
	if err != nil {
		t.Fatal(err)
	}
	_, recs := readRecords(t, res.ArchiveDir)
	f := formal(recs)
	if len(f) != 4 {
		t.Fatalf("%d formal records", len(f))
	}
	sort.Slice(f, func(i, j int) bool { return f[i].Index < f[j].Index })
	offsets := []float64{0, .05, .05, .2}
	outs := []int{3, 2, 5, 1}
	t0 := *f[0].ScheduledTime
	for i, r := range f {
		if math.Abs(*r.ScheduledTime-t0-offsets[i]) > 1e-6 || r.SendTime-*r.ScheduledTime > 0.05 {
			t.Errorf("request %d scheduled +%.4f sent +%.4f, trace says +%.2f", i, *r.ScheduledTime-t0, r.SendTime-t0, offsets[i])
		}
		if r.MaxTokens != outs[i] || r.OutputTokens != outs[i] {
			t.Errorf("request %d max_tokens %d output %d, trace says %d", i, r.MaxTokens, r.OutputTokens, outs[i])
		}
	}
	var man runarchive.Manifest
	readJSON(t, filepath.Join(res.ArchiveDir, runarchive.ManifestFile), &man)
	if man.Load.Mode != "trace" || man.Prompts != 4 || man.WarmupPrompts != 2 {
		t.Errorf("manifest load %+v prompts %d warmup %d", man.Load, man.Prompts, man.WarmupPrompts)
	}
}

func TestRunDataset(t *testing.T) {
	srv := openaitest.New(openaitest.Behavior{})
	defer srv.Close()
	srv.KeepBodies()
	cfg := testConfig(t, srv.BaseURL())
	cfg.Workload.Dataset = filepath.Join("testdata", "dataset.jsonl")
	cfg.Concurrency = 1
	cfg.Requests = 4
	cfg.WarmupRequests = 0
	cfg.Endpoint = "chat"
	think := false
	cfg.Extras.EnableThinking = &think
	opts := testOptions()
	opts.Engine = &fakeEngine{}
	if _, err := Run(context.Background(), cfg, opts); err != nil {
		t.Fatal(err)
	}
	bodies := srv.Bodies()
	want := []string{"Tell me about the sea.", "Name three colours.", "What is energy?", "Tell me about the sea."}
	if len(bodies) != 4 {
		t.Fatalf("%d bodies", len(bodies))
	}
	for i, b := range bodies {
		msgs, _ := b["messages"].([]any)
		m, _ := msgs[0].(map[string]any)
		if m["content"] != want[i] {
			t.Errorf("request %d prompt %v, want %q", i, m["content"], want[i])
		}
		if kw, _ := b["chat_template_kwargs"].(map[string]any); kw["enable_thinking"] != false {
			t.Errorf("request %d thinking %v", i, b["chat_template_kwargs"])
		}
		if so, _ := b["stream_options"].(map[string]any); so["include_usage"] != true || b["stream"] != true {
			t.Errorf("request %d stream options %v", i, b)
		}
	}
}

func TestSlotsUniqueTimestamps(t *testing.T) {
	var s slots
	var mu sync.Mutex
	seen := map[[2]int64]bool{}
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				slot := s.acquire()
				time.Sleep(time.Millisecond) // a request lasts a while
				end := time.Now().UnixMilli()
				mu.Lock()
				k := [2]int64{int64(slot), end}
				if seen[k] {
					t.Errorf("slot %d ended twice in ms %d", slot, end)
				}
				seen[k] = true
				mu.Unlock()
				s.release(slot, end)
			}
		}()
	}
	wg.Wait()
	// A slot is reused from the next millisecond on: about one spare per
	// worker at most.
	if n := len(s.busy); n > 16 {
		t.Errorf("%d slots for 8 workers", n)
	}
}

// gate holds each generation request until size of them are open, so a
// closed loop of size workers has them all in flight at once whatever the
// scheduling; a request left waiting 30 s (fewer workers than size) passes
// and is counted in stuck.
type gate struct {
	mu      sync.Mutex
	size    int
	open    int
	release chan struct{}
	stuck   int
}

func (g *gate) setSize(n int) {
	g.mu.Lock()
	g.size, g.open, g.release = n, 0, make(chan struct{})
	g.mu.Unlock()
}

func (g *gate) wait() {
	g.mu.Lock()
	ch := g.release
	if g.open++; g.open >= g.size {
		close(g.release)
		g.open, g.release = 0, make(chan struct{})
	}
	g.mu.Unlock()
	t := time.NewTimer(30 * time.Second)
	defer t.Stop()
	select {
	case <-ch:
	case <-t.C:
		g.mu.Lock()
		g.stuck++
		g.mu.Unlock()
	}
}

// gatedEngine sets the gate to each sweep point's concurrency as the
// point starts its engine.
type gatedEngine struct {
	fakeEngine
	g     *gate
	sizes []int
}

func (e *gatedEngine) Start(ctx context.Context) error {
	n, _ := e.counts()
	e.g.setSize(e.sizes[n])
	return e.fakeEngine.Start(ctx)
}

// TestSweep runs a point per concurrency, each under its own run id. The
// server holds requests until the point's concurrency of them are open, so
// each point's overlap is exactly its concurrency: 3 workers against an
// instant server need not ever have 3 requests in flight.
func TestSweep(t *testing.T) {
	g := &gate{}
	srv := openaitest.New(openaitest.Behavior{Answer: func(string) string { g.wait(); return "one two three four" }})
	defer srv.Close()
	cfg := testConfig(t, srv.BaseURL())
	cfg.Concurrency = 0
	cfg.SweepConcurrency = []int{1, 3}
	cfg.RunID = "sw"
	cfg.Requests, cfg.WarmupRequests = 6, 3 // whole rounds of 1 and 3
	opts := testOptions()
	opts.Engine = &gatedEngine{g: g, sizes: cfg.SweepConcurrency}
	if _, err := Run(context.Background(), cfg, opts); err == nil || !strings.Contains(err.Error(), "Sweep") {
		t.Errorf("Run with a sweep: %v", err)
	}
	res, err := Sweep(context.Background(), cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 2 || res[0].RunID != "sw-c1" || res[1].RunID != "sw-c3" {
		t.Fatalf("sweep results %+v", res)
	}
	if g.stuck > 0 {
		t.Errorf("%d requests waited 30 s for the point's concurrency of requests in flight", g.stuck)
	}
	for i, r := range res {
		_, recs := readRecords(t, r.ArchiveDir)
		if got := maxOverlap(formal(recs)); got != []int{1, 3}[i] {
			t.Errorf("%s: overlap %d", r.RunID, got)
		}
	}
	pts := sweepPoints(Config{SweepRate: []float64{0.5, 2}, RunID: "x"})
	if pts[0].RunID != "x-r0_5" || pts[1].Rate != 2 || pts[1].SweepRate != nil {
		t.Errorf("rate points %+v", pts)
	}
}

// TestRunDurationHardBound: against a server that never sends a token, the
// formal duration still ends the run: requests running past the drain
// timeout are canceled and counted as failed, class canceled_at_end.
func TestRunDurationHardBound(t *testing.T) {
	srv := openaitest.New(openaitest.Behavior{FirstTokenDelay: time.Hour})
	defer srv.Close()
	cfg := testConfig(t, srv.BaseURL())
	cfg.Requests, cfg.WarmupRequests = 0, 0
	cfg.Duration, cfg.Timeouts.Drain, cfg.Timeouts.Idle = 300*time.Millisecond, 200*time.Millisecond, 0
	t0 := time.Now()
	res, err := runFake(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(t0); took > 20*time.Second {
		t.Errorf("run took %v with a 300ms duration and a 200ms drain", took)
	}
	_, recs := readRecords(t, res.ArchiveDir)
	if len(recs) != cfg.Concurrency || res.Summary.Errors[string(contract.ClassCanceledAtEnd)] != cfg.Concurrency {
		t.Errorf("%d records, errors %v; want %d canceled_at_end", len(recs), res.Summary.Errors, cfg.Concurrency)
	}
	if why := res.Unusable(); len(why) == 0 || !strings.Contains(why[0], "no successful formal request") {
		t.Errorf("unusable %v, want no successful formal request", why)
	}
	var sb strings.Builder
	if err := WriteSummary(&sb, res); err != nil || !strings.Contains(sb.String(), "n/a (no successful formal request)") || strings.Contains(sb.String(), "0.0000") {
		t.Errorf("summary of a run with nothing measured must say n/a:\n%s", sb.String())
	}
}

// TestRunIdleTimeout: a stream silent for the idle timeout fails with its
// own class, also in the warm-up (which has no duration bound).
func TestRunIdleTimeout(t *testing.T) {
	srv := openaitest.New(openaitest.Behavior{FirstTokenDelay: time.Hour})
	defer srv.Close()
	cfg := testConfig(t, srv.BaseURL())
	cfg.Requests, cfg.WarmupRequests, cfg.Timeouts.Idle = 2, 1, 200*time.Millisecond
	res, err := runFake(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res.Summary.Errors[string(contract.ClassTimeoutIdle)] != 2 || res.Warmup.Errors[string(contract.ClassTimeoutIdle)] != 1 {
		t.Errorf("formal errors %v, warm-up errors %v; want timeout_idle for every request", res.Summary.Errors, res.Warmup.Errors)
	}
}
