package benchjob

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/joulemark/joulemark/benchjob/openai/openaitest"
	"github.com/joulemark/joulemark/internal/contract"
	"github.com/joulemark/joulemark/internal/gpu"
	"github.com/joulemark/joulemark/internal/runarchive"
)

// TestRunHostileUsage: an engine whose usage cannot be true (negative
// counts, far beyond max_tokens) or whose stream is only [DONE] does not
// crash the bench: each request fails with its own class, counted in the
// error rate, the archive is complete and the run unusable.
func TestRunHostileUsage(t *testing.T) {
	for _, tc := range []struct {
		name string
		b    openaitest.Behavior
		want contract.ErrorClass
	}{
		{"negative usage", openaitest.Behavior{Usage: `{"completion_tokens":-1000000,"prompt_tokens":-5}`}, contract.ClassInvalidUsage},
		{"usage 1e15", openaitest.Behavior{Usage: `{"completion_tokens":1000000000000000,"prompt_tokens":7}`}, contract.ClassInvalidUsage},
		{"only [DONE]", openaitest.Behavior{Empty: true}, contract.ClassEmptyResponse},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := openaitest.New(tc.b)
			defer srv.Close()
			rw := newRWReceiver(t)
			cfg := testConfig(t, srv.BaseURL())
			cfg.RemoteWrite.URL = rw.URL
			res, err := runFake(cfg)
			if err != nil {
				t.Fatal(err)
			}
			s := res.Summary
			if s.Succeeded != 0 || s.Failed != 10 || s.Errors[string(tc.want)] != 10 || s.ErrorRate != 1 {
				t.Fatalf("summary %+v, want 10 failures of class %s", s, tc.want)
			}
			if len(res.Unusable()) == 0 {
				t.Error("a run with no valid answer is usable")
			}
			_, recs := readRecords(t, res.ArchiveDir)
			for _, r := range recs {
				if r.Success || r.ErrorClass != string(tc.want) || r.OutputTokens != 0 {
					t.Errorf("record %+v", r)
				}
			}
			for _, x := range rw.named(contract.BenchOutputTokens) {
				if x.value != 0 {
					t.Errorf("%s = %g, want 0", contract.BenchOutputTokens, x.value)
				}
			}
		})
	}
}

// TestRunPanicFinalises: a panic in the request path (a bug) does not kill
// the process: the run stops with an error wrapping ErrPanic, its archive
// is final (requests.jsonl committed, manifest status failed) and the run
// is ended on the exporter.
func TestRunPanicFinalises(t *testing.T) {
	srv := openaitest.New(openaitest.Behavior{})
	defer srv.Close()
	exp := newFakeExporter(t, "")
	cfg := testConfig(t, srv.BaseURL())
	cfg.Exporters = []string{exp.URL}
	cfg.Requests = 1000
	var n atomic.Int64
	testHookRequest = func(r *runarchive.Request) {
		if r.Phase == "formal" && n.Add(1) == 5 {
			panic("injected bug")
		}
	}
	defer func() { testHookRequest = nil }()
	res, err := runFake(cfg)
	if !errors.Is(err, ErrPanic) || res == nil {
		t.Fatalf("err %v res %v, want ErrPanic with a result", err, res)
	}
	if res.Status != runarchive.StatusFailed {
		t.Errorf("status %s, want failed", res.Status)
	}
	if _, err := os.Stat(filepath.Join(res.ArchiveDir, runarchive.RequestsFile)); err != nil {
		t.Errorf("requests.jsonl not committed: %v", err)
	}
	var man runarchive.Manifest
	readJSON(t, filepath.Join(res.ArchiveDir, runarchive.ManifestFile), &man)
	if man.Status != runarchive.StatusFailed || !strings.Contains(man.Error, "injected bug") {
		t.Errorf("manifest status %s error %q", man.Status, man.Error)
	}
	if !exp.isEnded() {
		t.Error("run not ended on the exporter")
	}
	if _, recs := readRecords(t, res.ArchiveDir); len(recs) >= 1000 {
		t.Errorf("%d records: the run went on after the panic", len(recs))
	}
}

// TestRunHonoursRetryAfter: a 429 with Retry-After pauses the load, closed
// and open loop: no request is sent in the second the engine asked for;
// the wait is recorded per request, in the manifest and as a flag.
func TestRunHonoursRetryAfter(t *testing.T) {
	for _, open := range []bool{false, true} {
		t.Run(map[bool]string{false: "closed", true: "open"}[open], func(t *testing.T) {
			srv := openaitest.New(openaitest.Behavior{FailEvery: 3, FailStatus: 429, RetryAfter: "1"})
			defer srv.Close()
			cfg := testConfig(t, srv.BaseURL())
			cfg.WarmupRequests = 0
			cfg.Requests = 6
			if open {
				cfg.Concurrency, cfg.Rate = 0, 200
			}
			res, err := runFake(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Contains(res.Flags, contract.FlagRetryAfter) {
				t.Errorf("flags %v lack %s", res.Flags, contract.FlagRetryAfter)
			}
			_, recs := readRecords(t, res.ArchiveDir)
			asked := 0
			for _, f := range recs {
				if f.StatusCode != 429 {
					continue
				}
				asked++
				if f.RetryAfterSeconds != 1 {
					t.Errorf("429 record retry_after_seconds %g, want 1", f.RetryAfterSeconds)
				}
				for _, r := range recs {
					// 100 ms either side: a request already past the
					// pause check when the 429 arrived.
					if r.SendTime > f.EndTime+0.1 && r.SendTime < f.EndTime+0.9 {
						t.Errorf("request %d sent %.3f s after a 429 that asked for 1 s", r.Index, r.SendTime-f.EndTime)
					}
				}
			}
			if asked == 0 {
				t.Fatal("no 429 answered")
			}
			var man runarchive.Manifest
			readJSON(t, filepath.Join(res.ArchiveDir, runarchive.ManifestFile), &man)
			if man.Load.RetryAfterWaitSeconds < 1 {
				t.Errorf("manifest retry_after_wait_seconds %g, want ≥ 1", man.Load.RetryAfterWaitSeconds)
			}
		})
	}
}

// TestRunStopGracefulThenHard: the first stop (Run's context canceled)
// sends no new request and lets those in flight finish within the drain
// timeout; the hard stop cancels them at once. The run is ended on the
// exporter and the archive is final either way.
func TestRunStopGracefulThenHard(t *testing.T) {
	for _, hard := range []bool{false, true} {
		t.Run(map[bool]string{false: "graceful", true: "hard"}[hard], func(t *testing.T) {
			// Each request takes 20 × 25 ms = 0.5 s.
			srv := openaitest.New(openaitest.Behavior{TokenDelay: 25 * time.Millisecond})
			defer srv.Close()
			exp := newFakeExporter(t, "")
			cfg := testConfig(t, srv.BaseURL())
			cfg.Exporters = []string{exp.URL}
			cfg.WarmupRequests = 0
			cfg.Requests, cfg.Concurrency = 0, 2
			cfg.Duration = time.Hour
			cfg.Workload.MeanOutputTokens, cfg.Workload.StddevOutputTokens = 20, 0
			cfg.Timeouts.Drain = time.Hour
			ctx, stop := context.WithCancel(context.Background())
			hardCtx, stopHard := context.WithCancel(context.Background())
			defer stopHard()
			opts := testOptions()
			opts.Engine, opts.HardStop = &fakeEngine{}, hardCtx
			go func() {
				for srv.Requests() < 2 {
					time.Sleep(5 * time.Millisecond)
				}
				stop()
				if hard {
					time.Sleep(50 * time.Millisecond)
					stopHard()
				}
			}()
			res, err := Run(ctx, cfg, opts)
			if !errors.Is(err, ErrAborted) || res == nil || res.Status != runarchive.StatusAborted {
				t.Fatalf("err %v res %+v", err, res)
			}
			if !exp.isEnded() {
				t.Error("run not ended on the exporter")
			}
			_, recs := readRecords(t, res.ArchiveDir)
			ok, canceled := 0, 0
			for _, r := range recs {
				switch {
				case r.Success:
					ok++
				case r.ErrorClass == string(contract.ClassCanceled):
					canceled++
				}
			}
			want := [2]int{2, 0} // graceful: the two in flight finish
			if hard {
				want = [2]int{0, 2}
			}
			if len(recs) != 2 || [2]int{ok, canceled} != want {
				t.Errorf("%d records: %d succeeded, %d canceled; want %v", len(recs), ok, canceled, want)
			}
		})
	}
}

// TestConcurrencyBounded: a concurrency beyond ConcurrencyLimit is bad
// usage; one above the number of requests runs with one request in flight
// per request (recorded in the manifest) instead of spinning.
func TestConcurrencyBounded(t *testing.T) {
	cfg := testConfig(t, "http://127.0.0.1:1/v1")
	cfg.Concurrency = 1_000_000_000_000
	if err := cfg.Validate(); !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), "at most 100000") {
		t.Errorf("concurrency 1e12: %v", err)
	}
	srv := openaitest.New(openaitest.Behavior{})
	defer srv.Close()
	cfg = testConfig(t, srv.BaseURL())
	cfg.Concurrency, cfg.Requests = ConcurrencyLimit, 10
	var logs strings.Builder
	opts := testOptions()
	opts.Engine, opts.Logger = &fakeEngine{}, slogTo(&logs)
	res, err := Run(context.Background(), cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	var man runarchive.Manifest
	readJSON(t, filepath.Join(res.ArchiveDir, runarchive.ManifestFile), &man)
	if res.Summary.Started != 10 || man.Load.Concurrency != 10 || !strings.Contains(logs.String(), "concurrency above the number of requests") {
		t.Errorf("started %d, manifest concurrency %d, warning logged %v", res.Summary.Started, man.Load.Concurrency,
			strings.Contains(logs.String(), "concurrency above"))
	}
}

// TestPreflightRefusesUnknownGPU: a GPU UUID the exporter does not read is
// refused in pre-flight, naming it and the exporter, before any run
// directory exists and before any phase is posted (it used to run the
// whole load, then exit 3).
func TestPreflightRefusesUnknownGPU(t *testing.T) {
	sim, err := gpu.NewSim(gpu.SimConfig{GPUs: 2, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	exp, expSrv := startSimExporter(t, sim)
	srv := openaitest.New(openaitest.Behavior{})
	defer srv.Close()
	t.Setenv("JOULEMARK_API_TOKEN", "tok")
	cfg := testConfig(t, srv.BaseURL())
	cfg.Exporters = []string{expSrv.URL}
	cfg.ExporterGPUs = []string{exp.Devices()[0].UUID, "GPU-00000000-dead-beef-0000-000000000000"}
	cfg.RunID = "unknown-gpu"
	_, err = runFake(cfg)
	if !errors.Is(err, ErrPreflight) || !strings.Contains(err.Error(), "GPU GPU-00000000-dead-beef-0000-000000000000 is not one it reads") ||
		!strings.Contains(err.Error(), expSrv.URL) {
		t.Fatalf("err %v, want a pre-flight refusal naming the GPU and the exporter", err)
	}
	if entries, _ := os.ReadDir(cfg.RunsDir); len(entries) != 0 {
		t.Errorf("a run directory was created: %v", entries)
	}
	if _, ok := exp.RunStatus("unknown-gpu"); ok {
		t.Error("a phase was posted after a failed pre-flight")
	}
}

// TestPreflightRefusesUnknownPod: a pod the exporter cannot resolve (here
// it reads no kubelet allocations) is refused in pre-flight, before any
// run directory exists.
func TestPreflightRefusesUnknownPod(t *testing.T) {
	sim, err := gpu.NewSim(gpu.SimConfig{GPUs: 2, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	_, expSrv := startSimExporter(t, sim)
	srv := openaitest.New(openaitest.Behavior{})
	defer srv.Close()
	t.Setenv("JOULEMARK_API_TOKEN", "tok")
	cfg := testConfig(t, srv.BaseURL())
	cfg.Exporters = []string{expSrv.URL}
	cfg.Engine.Pod = "serve/vllm-0"
	_, err = runFake(cfg)
	if !errors.Is(err, ErrPreflight) || !strings.Contains(err.Error(), "exporter "+expSrv.URL+": cannot measure --engine.pod") ||
		!strings.Contains(err.Error(), "serve/vllm-0") {
		t.Fatalf("err %v, want a pre-flight refusal of the pod", err)
	}
	if entries, _ := os.ReadDir(cfg.RunsDir); len(entries) != 0 {
		t.Errorf("a run directory was created: %v", entries)
	}
}
