package benchjob

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/golang/snappy"
	"github.com/prometheus/prometheus/prompb"

	"github.com/joulemark/joulemark/exporter"
	"github.com/joulemark/joulemark/internal/contract"
	"github.com/joulemark/joulemark/internal/gpu"
	"github.com/joulemark/joulemark/internal/phaseapi"
	"github.com/joulemark/joulemark/internal/runarchive"
)

// fakeExporter serves the phase API the way the exporter does, recording
// every phase posted; release closes after releasePolls GETs.
type fakeExporter struct {
	*httptest.Server
	token        string
	releasePolls int
	neverClose   bool
	failAfter    int // phase posts after this many answer 500 (0: never)
	blips        int // the next this many phase posts answer 503 (a restart)
	forget       int // GET run status leaves out the first this many phases (lost in a restart)

	mu         sync.Mutex
	preflights int
	used       map[string]bool // run ids the pre-flight refuses
	events     []contract.Phase
	times      []float64
	ended      bool
	exited     bool // the bench reported the engine's exit
	polls      int
}

func newFakeExporter(t *testing.T, token string) *fakeExporter {
	f := &fakeExporter{token: token, releasePolls: 2}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/v1/gpus", func(w http.ResponseWriter, r *http.Request) {
		if !f.authed(w, r) {
			return
		}
		_ = json.NewEncoder(w).Encode([]phaseapi.GPUInfo{{GPU: 0, UUID: "GPU-fake-0", Name: "Fake H100", DriverVersion: "550.1", EnergySource: "counter", Healthy: true}})
	})
	mux.HandleFunc("GET /api/v1/preflight", f.preflight)
	mux.HandleFunc("POST /api/v1/runs/{id}/phases/{phase}", f.postPhase)
	mux.HandleFunc("POST /api/v1/runs/{id}/end", func(w http.ResponseWriter, r *http.Request) {
		if !f.authed(w, r) {
			return
		}
		f.mu.Lock()
		f.ended = true
		f.mu.Unlock()
		_ = json.NewEncoder(w).Encode(f.status(r.PathValue("id"), false))
	})
	mux.HandleFunc("POST /api/v1/runs/{id}/engine-exited", func(w http.ResponseWriter, r *http.Request) {
		if !f.authed(w, r) {
			return
		}
		f.mu.Lock()
		f.exited = true
		f.mu.Unlock()
		_ = json.NewEncoder(w).Encode(f.status(r.PathValue("id"), false))
	})
	mux.HandleFunc("GET /api/v1/runs/{id}", func(w http.ResponseWriter, r *http.Request) {
		if !f.authed(w, r) {
			return
		}
		_ = json.NewEncoder(w).Encode(f.status(r.PathValue("id"), true))
	})
	f.Server = httptest.NewServer(mux)
	t.Cleanup(f.Close)
	return f
}

// preflight answers the pre-flight: refused for a used run id.
func (f *fakeExporter) preflight(w http.ResponseWriter, r *http.Request) {
	if !f.authed(w, r) {
		return
	}
	f.mu.Lock()
	f.preflights++
	used := f.used[r.URL.Query().Get("run_id")]
	f.mu.Unlock()
	if used {
		w.WriteHeader(http.StatusConflict)
		_ = json.NewEncoder(w).Encode(phaseapi.Error{Error: "run ID used before"})
		return
	}
	_ = json.NewEncoder(w).Encode(phaseapi.Preflight{RunID: r.URL.Query().Get("run_id"),
		GPUs: []phaseapi.GPUInfo{{GPU: 0, UUID: "GPU-fake-0", Name: "Fake H100", DriverVersion: "550.1", EnergySource: "counter", Healthy: true}}})
}

// postPhase takes a phase, unless a blip or a failure is due.
func (f *fakeExporter) postPhase(w http.ResponseWriter, r *http.Request) {
	if !f.authed(w, r) {
		return
	}
	p, err := contract.ParsePhase(r.PathValue("phase"))
	if err != nil {
		w.WriteHeader(http.StatusBadRequest)
		_ = json.NewEncoder(w).Encode(phaseapi.Error{Error: err.Error()})
		return
	}
	f.mu.Lock()
	if f.blips > 0 {
		f.blips--
		f.mu.Unlock()
		w.WriteHeader(http.StatusServiceUnavailable)
		_ = json.NewEncoder(w).Encode(phaseapi.Error{Error: "restarting"})
		return
	}
	if f.failAfter > 0 && len(f.events) >= f.failAfter {
		f.mu.Unlock()
		w.WriteHeader(http.StatusInternalServerError)
		_ = json.NewEncoder(w).Encode(phaseapi.Error{Error: "disk full"})
		return
	}
	f.events = append(f.events, p)
	f.times = append(f.times, float64(time.Now().UnixNano())/1e9)
	f.mu.Unlock()
	_ = json.NewEncoder(w).Encode(f.status(r.PathValue("id"), false))
}

func (f *fakeExporter) authed(w http.ResponseWriter, r *http.Request) bool {
	if f.token != "" && r.Header.Get("Authorization") != "Bearer "+f.token {
		w.WriteHeader(http.StatusUnauthorized)
		_ = json.NewEncoder(w).Encode(phaseapi.Error{Error: "bad token"})
		return false
	}
	return true
}

func (f *fakeExporter) status(id string, poll bool) *phaseapi.RunStatus {
	f.mu.Lock()
	defer f.mu.Unlock()
	st := &phaseapi.RunStatus{RunID: id, State: phaseapi.RunActive, Release: phaseapi.ReleaseStatus{State: phaseapi.ReleaseNotStarted}}
	for i, p := range f.events {
		if poll && i < f.forget {
			continue
		}
		ps := phaseapi.PhaseStatus{Phase: p, Start: f.times[i], Active: i == len(f.events)-1 && !f.ended}
		if i+1 < len(f.events) {
			e := f.times[i+1]
			ps.End = &e
		}
		st.Phases = append(st.Phases, ps)
	}
	if n := len(f.events); n > 0 && f.events[n-1] == contract.Release {
		if poll {
			f.polls++
		}
		st.Release.State = phaseapi.ReleaseWaiting
		if f.polls >= f.releasePolls && !f.neverClose {
			closed := true
			st.Release.State, st.Release.Closed = phaseapi.ReleaseClosed, &closed
			f.ended = true
		}
	}
	if f.ended {
		st.State = phaseapi.RunEnded
	}
	return st
}

func (f *fakeExporter) phases() []contract.Phase {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]contract.Phase(nil), f.events...)
}

func (f *fakeExporter) isEnded() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.ended
}

// rwSample is one received remote-write sample.
type rwSample struct {
	labels map[string]string
	value  float64
	ts     int64
}

// rwReceiver decodes remote-write requests (snappy, prompb).
type rwReceiver struct {
	*httptest.Server
	mu      sync.Mutex
	samples []rwSample
	headers http.Header
	fail    bool
	// failSamples refuses every write with samples (an outage after the
	// pre-flight's empty write got through).
	failSamples bool
}

func newRWReceiver(t *testing.T) *rwReceiver {
	rw := &rwReceiver{}
	rw.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rw.mu.Lock()
		rw.headers = r.Header.Clone()
		fail, failSamples := rw.fail, rw.failSamples
		rw.mu.Unlock()
		if fail {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		comp, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		raw, err := snappy.Decode(nil, comp)
		if err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		var req prompb.WriteRequest
		if err := req.Unmarshal(raw); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		if failSamples && len(req.Timeseries) > 0 {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		rw.mu.Lock()
		defer rw.mu.Unlock()
		for _, ts := range req.Timeseries {
			l := map[string]string{}
			for _, x := range ts.Labels {
				l[x.Name] = x.Value
			}
			for _, s := range ts.Samples {
				rw.samples = append(rw.samples, rwSample{labels: l, value: s.Value, ts: s.Timestamp})
			}
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(rw.Close)
	return rw
}

func (rw *rwReceiver) all() []rwSample {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	return slices.Clone(rw.samples)
}

func (rw *rwReceiver) named(name string) []rwSample {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	var out []rwSample
	for _, s := range rw.samples {
		if s.labels["__name__"] == name {
			out = append(out, s)
		}
	}
	return out
}

// fakeEngine is an in-process Engine: it counts Start/Stop and writes a log
// line when its output is captured.
type fakeEngine struct {
	mu            sync.Mutex
	starts, stops int
	logs          io.Writer
	startErr      error
}

func (e *fakeEngine) CaptureLogs(w io.Writer) { e.logs = w }
func (e *fakeEngine) Start(context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.starts++
	if e.logs != nil {
		io.WriteString(e.logs, "fake engine: started\n")
	}
	return e.startErr
}
func (e *fakeEngine) Stop(context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.stops++
	return nil
}
func (e *fakeEngine) counts() (int, int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.starts, e.stops
}

// readRecords reads a run's requests.jsonl as raw maps and as Records.
func readRecords(t *testing.T, dir string) ([]map[string]any, []runarchive.Request) {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, runarchive.RequestsFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var raws []map[string]any
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("requests.jsonl: %v", err)
		}
		raws = append(raws, m)
	}
	return raws, readRequests(t, dir)
}

// readRequests reads a run's requests.jsonl through runarchive.
func readRequests(t *testing.T, dir string) []runarchive.Request {
	t.Helper()
	run, err := runarchive.OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var recs []runarchive.Request
	if err := run.EachRequest(func(_ int, r *runarchive.Request) error {
		recs = append(recs, *r)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return recs
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// testConfig is a small, fast closed-loop config against target.
func testConfig(t *testing.T, target string) Config {
	c := Defaults()
	c.Target = target
	c.Model = "test-model"
	c.Concurrency = 2
	c.Requests = 10
	c.WarmupRequests = 2
	c.IdleDuration = 20 * time.Millisecond
	c.Workload.MeanInputTokens, c.Workload.MeanOutputTokens = 40, 4
	c.Workload.StddevInputTokens, c.Workload.StddevOutputTokens = 5, 1
	c.Engine.ReadyTimeout = 5 * time.Second
	c.Engine.StopGrace = time.Second
	c.Engine.ReleaseWait = 10 * time.Second
	c.RemoteWrite.AggregateInterval = 50 * time.Millisecond
	c.RemoteWrite.FlushTimeout = 10 * time.Second
	c.RunsDir = t.TempDir()
	return c
}

func testOptions() Options {
	return Options{PollInterval: 10 * time.Millisecond, Progress: io.Discard, PhaseRetry: 2 * time.Second}
}

// runFake runs cfg with testOptions and a fakeEngine.
func runFake(cfg Config) (*Result, error) {
	opts := testOptions()
	opts.Engine = &fakeEngine{}
	return Run(context.Background(), cfg, opts)
}

func slogTo(w io.Writer) *slog.Logger { return slog.New(slog.NewTextHandler(w, nil)) }

// startSimExporter starts an exporter over sim (API token "tok", sampling
// every 10 ms, quick release checks) behind an httptest server; both stop
// when the test ends.
func startSimExporter(t *testing.T, sim gpu.Backend) (*exporter.Exporter, *httptest.Server) {
	t.Helper()
	cfg := exporter.Defaults()
	cfg.Backend, cfg.Interval, cfg.ReleaseHold = sim, 10*time.Millisecond, 200*time.Millisecond
	cfg.ReleaseWindow, cfg.ReleaseMaxWait, cfg.APIToken = 50*time.Millisecond, 20*time.Second, "tok"
	exp, err := exporter.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	exp.Start(ctx)
	t.Cleanup(func() { exp.Close() })
	srv := httptest.NewServer(exp.Handler())
	t.Cleanup(srv.Close)
	return exp, srv
}

// readPhases reads a run's phases.json through runarchive.
func readPhases(t *testing.T, dir string) *runarchive.Phases {
	t.Helper()
	run, err := runarchive.OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	ph, err := run.ReadPhases()
	if err != nil {
		t.Fatal(err)
	}
	return ph
}
