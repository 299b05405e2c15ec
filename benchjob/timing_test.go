package benchjob

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/joulemark/joulemark/internal/runarchive"
	"github.com/joulemark/joulemark/internal/rxstamp"
)

// timedEngine streams every completion on a fixed schedule (first token
// after ttft, then one token every gap) and notes, per answer, when it
// really read the request and sent each token: the truth the client's
// timing is judged against. Each answer's text is unique, so its SHA-256
// (the record's output_hash) names it.
type timedEngine struct {
	*httptest.Server
	ttft, gap time.Duration
	n         atomic.Int64
	truth     sync.Map // output hash -> *served
}

// served is what the server did for one request. The send instants are
// taken just before the writes, so the client cannot see a byte before
// its instant.
type served struct {
	Recv   time.Time   `json:"recv"`   // the request reached the socket (kernel timestamp; else handler entered)
	Tokens []time.Time `json:"tokens"` // each token chunk sent
	End    time.Time   `json:"end"`    // usage and [DONE] sent
}

func newTimedEngine(ttft, gap time.Duration) *timedEngine {
	e := &timedEngine{ttft: ttft, gap: gap}
	mux := http.NewServeMux()
	mux.HandleFunc("/health", func(http.ResponseWriter, *http.Request) {})
	mux.HandleFunc("/v1/models", func(w http.ResponseWriter, _ *http.Request) {
		io.WriteString(w, `{"object":"list","data":[{"id":"m","object":"model"}]}`)
	})
	mux.HandleFunc("/v1/completions", e.complete)
	mux.HandleFunc("/truth", e.serveTruth)
	e.Server = httptest.NewUnstartedServer(mux)
	e.Listener = rxListener{e.Listener}
	e.Config.ConnContext = func(ctx context.Context, c net.Conn) context.Context {
		return context.WithValue(ctx, connKey{}, c)
	}
	e.Start()
	return e
}

// rxListener accepts connections whose reads carry the kernel's receive
// timestamps, so that the server's truth starts when the request reached
// its socket, not when its handler got a CPU.
type rxListener struct{ net.Listener }

func (l rxListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return rxstamp.Wrap(c), nil
}

// connKey is the request context's key of its connection.
type connKey struct{}

func (e *timedEngine) complete(w http.ResponseWriter, r *http.Request) {
	nc, _ := r.Context().Value(connKey{}).(net.Conn)
	s := &served{Recv: rxstamp.Arrival(nc, time.Now())}
	var req struct {
		MaxTokens int `json:"max_tokens"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.MaxTokens < 1 {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	id := e.n.Add(1)
	w.Header().Set("Content-Type", "text/event-stream")
	fl := w.(http.Flusher)
	h := sha256.New()
	next := s.Recv.Add(e.ttft)
	for i := 0; i < req.MaxTokens; i++ {
		time.Sleep(time.Until(next))
		text, fin := " tok", "null"
		if i == 0 {
			text = fmt.Sprintf(" r%d", id)
		}
		if i == req.MaxTokens-1 {
			fin = `"length"`
		}
		h.Write([]byte(text))
		s.Tokens = append(s.Tokens, time.Now())
		fmt.Fprintf(w, "data: {\"id\":\"cmpl-%d\",\"object\":\"text_completion\",\"model\":\"m\",\"choices\":[{\"index\":0,\"text\":%q,\"finish_reason\":%s}]}\n\n", id, text, fin)
		fl.Flush()
		next = next.Add(e.gap)
	}
	s.End = time.Now()
	fmt.Fprintf(w, "data: {\"id\":\"cmpl-%d\",\"model\":\"m\",\"choices\":[],\"usage\":{\"prompt_tokens\":30,\"completion_tokens\":%d,\"total_tokens\":%d}}\n\ndata: [DONE]\n\n", id, req.MaxTokens, 30+req.MaxTokens)
	fl.Flush()
	e.truth.Store(hex.EncodeToString(h.Sum(nil)), s)
}

// serveTruth answers every answer's truth so far, by output hash.
func (e *timedEngine) serveTruth(w http.ResponseWriter, _ *http.Request) {
	m := map[string]*served{}
	e.truth.Range(func(k, v any) bool {
		m[k.(string)] = v.(*served)
		return true
	})
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(m)
}

// timingErrors are the client's measurement errors (measured minus the
// server's truth) over a run's records, in seconds, each sorted.
type timingErrors struct {
	ttft, tpot, itl []float64
	// up and down split the TTFT error (wall clocks, one machine): the
	// client's send to the server's receipt, and the server's first write
	// to the client's first-token instant.
	up, down  []float64
	unmatched int
}

// compare pairs each successful record with what the server did for it
// (by output hash). TTFT's truth is the server's request receipt to its
// first token; TPOT's its first token to its end ([DONE]) over the tokens
// after the first, as the record's; ITL's the gaps between its tokens.
func compare(recs []runarchive.Request, truth func(hash string) (*served, bool)) timingErrors {
	var te timingErrors
	for _, r := range recs {
		if r.Phase != "formal" {
			continue // warm-up: it opens the connections
		}
		s, ok := truth(r.OutputHash)
		if !r.Success || !ok || r.TTFTSeconds == nil {
			te.unmatched++
			continue
		}
		te.ttft = append(te.ttft, *r.TTFTSeconds-s.Tokens[0].Sub(s.Recv).Seconds())
		if r.FirstTokenTime != nil {
			te.up = append(te.up, unixSeconds(s.Recv)-r.SendTime)
			te.down = append(te.down, *r.FirstTokenTime-unixSeconds(s.Tokens[0]))
		}
		if r.TPOTSeconds != nil && len(s.Tokens) > 1 {
			te.tpot = append(te.tpot, *r.TPOTSeconds-s.End.Sub(s.Tokens[0]).Seconds()/float64(len(s.Tokens)-1))
		}
		for i, g := range r.ITLSeconds {
			if i+1 < len(s.Tokens) {
				te.itl = append(te.itl, g-s.Tokens[i+1].Sub(s.Tokens[i]).Seconds())
			}
		}
	}
	sort.Float64s(te.ttft)
	sort.Float64s(te.tpot)
	sort.Float64s(te.itl)
	return te
}

// quantile is the nearest-rank quantile q of sorted v (NaN when empty).
func quantile(v []float64, q float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	return v[max(0, min(len(v)-1, int(math.Ceil(q*float64(len(v))))-1))]
}

// absQuantile is quantile q of |v|.
func absQuantile(v []float64, q float64) float64 {
	a := make([]float64, len(v))
	for i, x := range v {
		a[i] = math.Abs(x)
	}
	sort.Float64s(a)
	return quantile(a, q)
}

var (
	benchTTFT = flag.Duration("bench-ttft", 30*time.Millisecond, "BenchmarkTimingAccuracy: the server's time to first token")
	benchGap  = flag.Duration("bench-gap", 10*time.Millisecond, "BenchmarkTimingAccuracy: the server's gap between tokens")
)

// timedRun runs n requests of 4 tokens in a closed loop of concurrency
// against the timed engine at url, and compares the records with the
// server's truth.
func timedRun(tb testing.TB, url string, truth func(hash string) (*served, bool), n int, load func(*Config)) (timingErrors, *Result) {
	cfg := Defaults()
	cfg.Target, cfg.Model = url+"/v1", "m"
	cfg.Requests, cfg.WarmupRequests = n, 0
	load(&cfg)
	cfg.Workload.MeanInputTokens, cfg.Workload.StddevInputTokens = 30, 0
	cfg.Workload.MeanOutputTokens, cfg.Workload.StddevOutputTokens = 4, 0
	cfg.Engine.NoLifecycle = true
	cfg.RunsDir = tb.TempDir()
	res, err := Run(context.Background(), cfg, Options{Progress: io.Discard, PollInterval: 10 * time.Millisecond})
	if err != nil {
		tb.Fatal(err)
	}
	run, err := runarchive.OpenDir(res.ArchiveDir)
	if err != nil {
		tb.Fatal(err)
	}
	var recs []runarchive.Request
	if err := run.EachRequest(func(_ int, r *runarchive.Request) error {
		recs = append(recs, *r)
		return nil
	}); err != nil {
		tb.Fatal(err)
	}
	return compare(recs, truth), res
}

// lookup is the truth of one answer, by output hash.
func (e *timedEngine) lookup(hash string) (*served, bool) {
	v, ok := e.truth.Load(hash)
	s, _ := v.(*served)
	return s, ok
}

// BenchmarkTimingAccuracy is the client's timing error under load: b.N
// streamed requests of 4 tokens, 64 in flight, against a server that sends
// the first token after -bench-ttft (30 ms) and the others -bench-gap
// (10 ms) apart — about 1,000 requests/s. Each request's measured TTFT,
// TPOT and token gaps are compared with the server's own clock: the metrics
// are the p50/p99/max of the absolute errors in ms. The target is p99 ≤
// 1 ms for TTFT and TPOT.
//
// The server runs in a process of its own, as an engine does (the test
// binary re-run, TestMain serving it).
func BenchmarkTimingAccuracy(b *testing.B) {
	b.Run("closed-64", func(b *testing.B) {
		url, truth := startTimedEngineProcess(b, *benchTTFT, *benchGap)
		reportTiming(b, url, truth, func(c *Config) { c.Concurrency, c.WarmupRequests = 64, 256 })
	})
	b.Run("poisson-1000", func(b *testing.B) {
		url, truth := startTimedEngineProcess(b, *benchTTFT, *benchGap)
		reportTiming(b, url, truth, func(c *Config) {
			c.Concurrency, c.Rate, c.Burstiness, c.MaxConcurrency, c.WarmupRequests = 0, 1000, 1, 64, 256
		})
	})
}

// reportTiming runs b.N requests against url and reports the errors
// against the truth that truth() fetches after the run.
func reportTiming(b *testing.B, url string, truth func() func(string) (*served, bool), load func(*Config)) {
	var lookup func(string) (*served, bool)
	b.ResetTimer()
	te, res := timedRun(b, url, func(h string) (*served, bool) {
		if lookup == nil {
			lookup = truth()
		}
		return lookup(h)
	}, b.N, load)
	b.StopTimer()
	if te.unmatched > 0 {
		b.Fatalf("%d of %d records without a server truth", te.unmatched, b.N)
	}
	ms := func(v float64) float64 { return v * 1000 }
	b.ReportMetric(res.Summary.RequestsPerSecond, "req/s")
	b.ReportMetric(ms(absQuantile(te.ttft, .5)), "ttft-err-p50-ms")
	b.ReportMetric(ms(absQuantile(te.ttft, .99)), "ttft-err-p99-ms")
	b.ReportMetric(ms(absQuantile(te.ttft, 1)), "ttft-err-max-ms")
	b.ReportMetric(ms(absQuantile(te.tpot, .5)), "tpot-err-p50-ms")
	b.ReportMetric(ms(absQuantile(te.tpot, .99)), "tpot-err-p99-ms")
	b.ReportMetric(ms(absQuantile(te.tpot, 1)), "tpot-err-max-ms")
	b.ReportMetric(ms(absQuantile(te.itl, .99)), "itl-err-p99-ms")
	b.ReportMetric(ms(absQuantile(te.up, .99)), "ttft-up-p99-ms")
	b.ReportMetric(ms(absQuantile(te.down, .99)), "ttft-down-p99-ms")
}

// timedEngineEnv carries the child's schedule ("ttft,gap") to its
// TestMain.
const timedEngineEnv = "JOULEMARK_TEST_TIMED_ENGINE"

// startTimedEngineProcess starts the timed engine in a child process and
// returns its URL and a function that fetches its truth (GET /truth: every
// answer's send instants, each on the child's own clock). The child exits
// when the test ends (its stdin closes).
func startTimedEngineProcess(tb testing.TB, ttft, gap time.Duration) (string, func() func(string) (*served, bool)) {
	tb.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), timedEngineEnv+"="+ttft.String()+","+gap.String())
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		stdin.Close()
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	url, ok := strings.CutPrefix(strings.TrimSpace(line), "url ")
	if err != nil || !ok {
		tb.Fatalf("timed engine process said %q: %v", line, err)
	}
	return url, func() func(string) (*served, bool) {
		resp, err := http.Get(url + "/truth")
		if err != nil {
			tb.Fatalf("fetching the server's truth: %v", err)
		}
		defer resp.Body.Close()
		var m map[string]*served
		if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
			tb.Fatalf("decoding the server's truth: %v", err)
		}
		return func(h string) (*served, bool) { s, ok := m[h]; return s, ok }
	}
}

// TestMain serves the timed engine instead of running the tests when the
// process is startTimedEngineProcess' child.
func TestMain(m *testing.M) {
	if spec := os.Getenv(timedEngineEnv); spec != "" {
		if err := serveTimedEngine(spec); err != nil {
			fmt.Fprintln(os.Stderr, "timed engine:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// serveTimedEngine is the child of startTimedEngineProcess: it serves the
// schedule spec ("ttft,gap"), prints its URL, and stops when its stdin
// closes.
func serveTimedEngine(spec string) error {
	ttftS, gapS, _ := strings.Cut(spec, ",")
	ttft, err1 := time.ParseDuration(ttftS)
	gap, err2 := time.ParseDuration(gapS)
	if err := errors.Join(err1, err2); err != nil {
		return fmt.Errorf("%s=%q: %w", timedEngineEnv, spec, err)
	}
	e := newTimedEngine(ttft, gap)
	defer e.Close()
	fmt.Println("url " + e.URL)
	_, err := io.Copy(io.Discard, os.Stdin)
	return err
}

// TestTimingErrorMeasurement checks the measurement the benchmark rests
// on (not the client's speed): every record pairs with the server's truth,
// the TTFT error is never negative (the server reads the request after the
// client sent it and starts each write before the client can read it: one clock), and a
// delay added to the records shows up as that much error.
func TestTimingErrorMeasurement(t *testing.T) {
	e := newTimedEngine(5*time.Millisecond, 2*time.Millisecond)
	defer e.Close()
	te, _ := timedRun(t, e.URL, e.lookup, 12, func(c *Config) { c.Concurrency = 3 })
	if te.unmatched != 0 || len(te.ttft) != 12 || len(te.tpot) != 12 || len(te.itl) != 36 {
		t.Fatalf("paired %d ttft, %d tpot, %d gaps, %d unmatched", len(te.ttft), len(te.tpot), len(te.itl), te.unmatched)
	}
	if te.ttft[0] < 0 {
		t.Fatalf("TTFT error %v < 0: the client saw the first token before the server sent it", te.ttft[0])
	}

	// The comparison itself: a record 3 ms late on its first token and
	// with gaps 1 ms long each has those errors.
	base := time.Unix(1000, 0)
	s := &served{Recv: base, Tokens: []time.Time{base.Add(10 * time.Millisecond), base.Add(20 * time.Millisecond), base.Add(30 * time.Millisecond)},
		End: base.Add(30 * time.Millisecond)}
	rec := runarchive.Request{Phase: "formal", Success: true, OutputHash: "h", TTFTSeconds: new(0.013), TPOTSeconds: new(0.011), ITLSeconds: []float64{0.011, 0.011}}
	got := compare([]runarchive.Request{rec, {Phase: "formal", OutputHash: "other", Success: true}, {Phase: "warmup", OutputHash: "h", Success: true}}, func(h string) (*served, bool) { return s, h == "h" })
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
	if got.unmatched != 1 || !near(got.ttft[0], 0.003) || !near(got.tpot[0], 0.001) || !near(got.itl[1], 0.001) {
		t.Fatalf("errors %+v, want ttft 3 ms, tpot 1 ms, gaps 1 ms, 1 unmatched", got)
	}
	if q := absQuantile([]float64{-0.004, 0.001, 0.002, 0.003}, .99); !near(q, 0.004) {
		t.Fatalf("p99 of |errors| %v, want 0.004", q)
	}
}
