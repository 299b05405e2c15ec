package benchjob

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/joulemark/joulemark/benchjob/openai"
	"github.com/joulemark/joulemark/benchjob/openai/openaitest"
	"github.com/joulemark/joulemark/internal/contract"
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
		want openai.Class
	}{
		{"negative usage", openaitest.Behavior{Usage: `{"completion_tokens":-1000000,"prompt_tokens":-5}`}, openai.ClassInvalidUsage},
		{"usage 1e15", openaitest.Behavior{Usage: `{"completion_tokens":1000000000000000,"prompt_tokens":7}`}, openai.ClassInvalidUsage},
		{"only [DONE]", openaitest.Behavior{Empty: true}, openai.ClassEmptyResponse},
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
	testHookRequest = func(r *Record) {
		if r.Phase == "formal" && n.Add(1) == 5 {
			panic("injected bug")
		}
	}
	defer func() { testHookRequest = nil }()
	res, err := runFake(cfg)
	if !errors.Is(err, ErrPanic) || res == nil {
		t.Fatalf("err %v res %v, want ErrPanic with a result", err, res)
	}
	if res.Status != StatusFailed {
		t.Errorf("status %s, want failed", res.Status)
	}
	if _, err := os.Stat(filepath.Join(res.ArchiveDir, runarchive.RequestsFile)); err != nil {
		t.Errorf("requests.jsonl not committed: %v", err)
	}
	var man Manifest
	readJSON(t, filepath.Join(res.ArchiveDir, runarchive.ManifestFile), &man)
	if man.Status != StatusFailed || !strings.Contains(man.Error, "injected bug") {
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
			var man Manifest
			readJSON(t, filepath.Join(res.ArchiveDir, runarchive.ManifestFile), &man)
			if man.Load.RetryAfterWaitSeconds < 1 {
				t.Errorf("manifest retry_after_wait_seconds %g, want ≥ 1", man.Load.RetryAfterWaitSeconds)
			}
		})
	}
}
