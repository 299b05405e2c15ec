package benchjob

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/joulemark/joulemark/benchjob/openai/openaitest"
	"github.com/joulemark/joulemark/internal/contract"
)

// TestLoadDefaultsReachSteadyState: a config naming no load gets
// concurrency 8 and 400 formal requests, enough for the steady state; too
// few requests are warned about with the number needed; an open loop or a
// duration keeps its own bounds.
func TestLoadDefaultsReachSteadyState(t *testing.T) {
	c := Defaults()
	c.applyLoadDefaults()
	if c.Concurrency != DefaultConcurrency || c.Requests != DefaultFormalRequests || c.steadyStateWarning() != "" {
		t.Errorf("defaults: concurrency %d, requests %d, warning %q", c.Concurrency, c.Requests, c.steadyStateWarning())
	}
	if need := SteadyStateNeed(8); need != 316 || DefaultFormalRequests < need {
		t.Errorf("need at concurrency 8: %d", need)
	}
	c = Defaults()
	c.Concurrency, c.Requests = 24, 320
	if w := c.steadyStateWarning(); !strings.Contains(w, "--requests 348") {
		t.Errorf("24 × 320: warning %q, want 348 named", w)
	}
	c = Defaults()
	c.Rate, c.Duration = 5, 60e9
	c.applyLoadDefaults()
	if c.Concurrency != 0 || c.Requests != 0 || c.steadyStateWarning() != "" {
		t.Errorf("open loop with a duration: concurrency %d requests %d", c.Concurrency, c.Requests)
	}
}

// TestFreshRunID: a repeat of a run (or of any of its sweep points) gets
// <run_id>-2, then -3, the first id free for every point.
func TestFreshRunID(t *testing.T) {
	c := Defaults()
	c.RunsDir, c.RunID, c.SweepConcurrency = t.TempDir(), "exp", []int{4, 8}
	if got := FreshRunID(c); got != "exp" {
		t.Errorf("first run: %q", got)
	}
	for _, d := range []string{"exp-c8", "exp-2-c4"} {
		if err := os.MkdirAll(filepath.Join(c.RunsDir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if got := FreshRunID(c); got != "exp-3" {
		t.Errorf("after exp-c8 and exp-2-c4: %q, want exp-3", got)
	}
}

// TestQuietWindow: an attached run with a quiet window posts idle, then
// formal; a quiet window without --engine.no-lifecycle is refused.
func TestQuietWindow(t *testing.T) {
	srv := openaitest.New(openaitest.Behavior{})
	defer srv.Close()
	exp := newFakeExporter(t, "")
	cfg := testConfig(t, srv.BaseURL())
	cfg.Engine.QuietWindow = 50 * time.Millisecond
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "engine.quiet_window") {
		t.Errorf("a quiet window with a cold start: %v", err)
	}
	cfg.Engine.NoLifecycle = true
	cfg.Exporters = []string{exp.URL}
	if _, err := Run(context.Background(), cfg, testOptions()); err != nil {
		t.Fatal(err)
	}
	if got := exp.phases(); !equalPhases(got, []contract.Phase{contract.Idle, contract.Formal}) {
		t.Errorf("phases %v, want idle then formal", got)
	}
}

// TestWatchFormalRate: a formal phase bounded by a duration alone is
// warned about, a fifth in, when its observed rate ends it short of the
// steady state, with the duration and requests needed.
func TestWatchFormalRate(t *testing.T) {
	var logs strings.Builder
	r := &runner{cfg: Defaults(), log: slog.New(slog.NewTextHandler(&logs, nil)), progress: newProgress(io.Discard, nil)}
	r.cfg.Concurrency, r.cfg.Duration = 8, 500*time.Millisecond
	r.progress.done.Store(10) // 10 requests in the first fifth: about 100 req/s
	r.watchFormalRate(context.Background(), time.Now())
	if out := logs.String(); !strings.Contains(out, "needs 316") || !strings.Contains(out, "--requests 316") || !strings.Contains(out, "--duration ") {
		t.Errorf("log %q", out)
	}
	logs.Reset()
	r.progress.done.Store(1000)
	r.watchFormalRate(context.Background(), time.Now())
	if logs.Len() != 0 {
		t.Errorf("a rate that reaches it was warned about: %q", logs.String())
	}
}
