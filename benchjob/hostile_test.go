package benchjob

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/joulemark/joulemark/benchjob/openai"
	"github.com/joulemark/joulemark/benchjob/openai/openaitest"
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
			for _, x := range rw.named(MetricOutputTokensTotal) {
				if x.value != 0 {
					t.Errorf("%s = %g, want 0", MetricOutputTokensTotal, x.value)
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
