package exporter

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/joulemark/joulemark/internal/contract"
	"github.com/joulemark/joulemark/internal/gpu"
	"github.com/joulemark/joulemark/internal/remotewrite"
)

// benchTick measures one sampling pass over 8 GPUs (what the sampler does
// every interval) and reports the cost per GPU sample and the share of one
// core that 8 GPUs at 10 Hz take.
func benchTick(b *testing.B, backend gpu.Backend, clk *fakeClock, advance func(time.Duration)) {
	benchTickWith(b, Config{Backend: backend, Clock: clk}, clk, advance)
}

// benchTickWith is benchTick on an exporter configured by cfg.
func benchTickWith(b *testing.B, cfg Config, clk *fakeClock, advance func(time.Duration)) {
	e, err := newExp(cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	// a run in progress, as during a benchmark: idle done, formal running
	e.mu.Lock()
	if _, _, err := e.lc.StartPhase("bench", contract.Idle, e.off(clk.Now()), nil, nil, nil); err != nil {
		b.Fatal(err)
	}
	e.mu.Unlock()
	for range 50 {
		clk.Advance(100 * time.Millisecond)
		advance(100 * time.Millisecond)
		e.SampleOnce()
	}
	e.mu.Lock()
	if _, _, err := e.lc.StartPhase("bench", contract.Formal, e.off(clk.Now()), nil, nil, nil); err != nil {
		b.Fatal(err)
	}
	e.mu.Unlock()
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for b.Loop() {
		clk.Advance(100 * time.Millisecond)
		advance(100 * time.Millisecond)
		e.SampleOnce()
	}
	perTick := float64(time.Since(start).Nanoseconds()) / float64(b.N)
	b.ReportMetric(perTick/8, "ns/gpu-sample")
	b.ReportMetric(perTick*10/1e9*100, "%core@8gpu-10Hz")
}

func BenchmarkSampleTick8GPUsSim(b *testing.B) {
	clk := newFakeClock()
	sim, _ := gpu.NewSim(gpu.SimConfig{GPUs: 8, NoiseWatts: 1, Clock: clk})
	sim.SetLoad(0.7)
	benchTick(b, sim, clk, func(time.Duration) {})
}

// BenchmarkSampleTick8GPUsRemoteWrite is BenchmarkSampleTick8GPUsSim with
// the raw samples remote-written (two series per GPU sample, two extra
// labels). The writer's buffer holds one sample and never flushes, so
// every later Append is dropped at once: what is measured is the
// sampler's side of remote write, the samples and their label sets.
func BenchmarkSampleTick8GPUsRemoteWrite(b *testing.B) {
	clk := newFakeClock()
	sim, _ := gpu.NewSim(gpu.SimConfig{GPUs: 8, NoiseWatts: 1, Clock: clk})
	sim.SetLoad(0.7)
	cfg := Config{Backend: sim, Clock: clk, RemoteWriteLabels: map[string]string{"instance": "node-1", "cluster": "c1"},
		RemoteWrite: &remotewrite.Config{URL: "http://127.0.0.1:1/api/v1/write", BufferSize: 1, FlushInterval: time.Hour}}
	benchTickWith(b, cfg, clk, func(time.Duration) {})
}

// BenchmarkMetrics8GPUs100Runs is a /metrics scrape with 8 GPUs and 100
// retained runs of 5 phases plus one run in progress, with the default
// settings; it reports p99 wall time and CPU time per scrape. The runs end
// 50 s apart, the shortest lifecycle the bench defaults allow (20 s idle,
// 30 s release hold); "burst" ends all of them within a second, the worst
// case (4000 phase-energy series). "prom3" sends the Accept header of
// Prometheus 3 (UTF-8 names allowed: no escaping pass); "gzip" asks for a
// compressed answer, as Prometheus does; "refreeze" makes every scrape the
// first one after a run froze or left /metrics.
func BenchmarkMetrics8GPUs100Runs(b *testing.B) {
	const prom3 = "text/plain;version=1.0.0;escaping=allow-utf-8;q=0.5,*/*;q=0.1"
	for _, tc := range []struct {
		name     string
		runs     int
		gap      time.Duration
		accept   string
		refreeze bool
	}{
		{"runs=100", 100, 50 * time.Second, "", false},
		{"runs=100/prom3", 100, 50 * time.Second, prom3, false},
		{"runs=100/gzip", 100, 50 * time.Second, "gzip", false},
		{"runs=100/gzip/refreeze", 100, 50 * time.Second, "gzip", true},
		{"runs=100/burst", 100, 0, "", false},
		{"runs=100/burst/gzip", 100, 0, "gzip", false},
		{"runs=10", 10, 50 * time.Second, "", false},
		{"runs=10/gzip", 10, 50 * time.Second, "gzip", false},
	} {
		b.Run(tc.name, func(b *testing.B) { benchMetrics(b, tc.runs, tc.gap, tc.accept, tc.refreeze) })
	}
}

func benchMetrics(b *testing.B, runs int, gap time.Duration, accept string, refreeze bool) {
	clk := newFakeClock()
	sim, _ := gpu.NewSim(gpu.SimConfig{GPUs: 8, NoiseWatts: 1, Clock: clk})
	e, err := newExp(Config{Backend: sim, Clock: clk, MaxRuns: 100})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	e.SampleOnce()
	e.SampleSlowOnce()
	for r := range runs + 1 {
		id := fmt.Sprintf("run-%03d", r)
		for _, p := range contract.Phases {
			e.mu.Lock()
			if _, _, err := e.lc.StartPhase(id, p, e.off(clk.Now()), nil, nil, nil); err != nil {
				b.Fatal(err)
			}
			e.mu.Unlock()
			clk.Advance(100 * time.Millisecond)
			e.SampleOnce()
		}
		if r == runs {
			break // the last run stays in progress
		}
		e.mu.Lock()
		if _, err := e.lc.End(id, e.off(clk.Now())); err != nil {
			b.Fatal(err)
		}
		e.mu.Unlock()
		clk.Advance(gap)
		e.SampleOnce()
	}
	clk.Advance(100 * time.Millisecond)
	e.SampleOnce()
	h := e.Handler()
	var took []time.Duration
	size := 0
	b.ReportAllocs()
	cpu0 := cpuTime()
	for b.Loop() {
		rec := &countingWriter{header: http.Header{}}
		req := httptest.NewRequest("GET", "/metrics", nil)
		switch accept {
		case "":
		case "gzip": // what every Prometheus asks for
			req.Header.Set("Accept-Encoding", "gzip")
		default:
			req.Header.Set("Accept", accept)
		}
		if refreeze { // as when a run froze: the frozen families are merged anew
			e.mu.Lock()
			e.frozenVersion++
			e.mu.Unlock()
		}
		t0 := time.Now()
		h.ServeHTTP(rec, req)
		took = append(took, time.Since(t0))
		if rec.code != 200 {
			b.Fatal(rec.code)
		}
		size = rec.n
	}
	b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/1000/float64(len(took)), "cpu-ms/scrape")
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)*99/100].Microseconds())/1000, "p99-ms")
	b.ReportMetric(float64(size), "bytes/scrape")
}

// cpuTime is the CPU time (user + system) this process used so far: on a
// shared machine it says more about a scrape's cost than wall time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// countingWriter is a ResponseWriter that only counts bytes, as a socket
// would take them: the benchmark measures the handler, not a buffer.
type countingWriter struct {
	header http.Header
	code   int
	n      int
}

func (w *countingWriter) Header() http.Header { return w.header }

func (w *countingWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
}

func (w *countingWriter) Write(p []byte) (int, error) {
	w.WriteHeader(200)
	w.n += len(p)
	return len(p), nil
}
