package exporter

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/joulemark/joulemark/internal/contract"
	"github.com/joulemark/joulemark/internal/gpu"
	"github.com/joulemark/joulemark/internal/phaseapi"
)

// TestRunIDUsedOnce: an id is refused (409) once used, after its run was
// evicted (--run.max-kept) and after a restart, and the pre-flight says so.
func TestRunIDUsedOnce(t *testing.T) {
	dir := t.TempDir()
	simCfg := gpu.SimConfig{GPUs: 2, Seed: 3}
	h := newHarness(t, simCfg, Config{MaxRuns: 1, StoragePath: dir})
	ctx := context.Background()
	for _, id := range []string{"r1", "r2"} {
		h.post(id, contract.Idle)
		h.step(time.Second)
		if _, err := h.client.EndRun(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	if _, ok := h.exp.RunStatus("r1"); ok {
		t.Fatal("r1 still kept with --run.max-kept 1: the eviction this test needs did not happen")
	}
	if _, err := h.client.StartPhase(ctx, "r1", contract.Idle); !phaseapi.IsStatus(err, http.StatusConflict) || !strings.Contains(err.Error(), "used before") {
		t.Errorf("reusing evicted r1: %v, want 409 naming the id as used", err)
	}
	if _, err := h.client.Preflight(ctx, "r1"); !phaseapi.IsStatus(err, http.StatusConflict) {
		t.Errorf("pre-flight of used r1: %v, want 409", err)
	}
	if _, err := h.client.Run(ctx, "r1"); !phaseapi.IsStatus(err, http.StatusNotFound) || !strings.Contains(err.Error(), "stays used") {
		t.Errorf("GET evicted r1: %v, want 404 saying the id stays used", err)
	}
	pf, err := h.client.Preflight(ctx, "r3")
	if err != nil || pf.RunID != "r3" || len(pf.GPUs) != 2 {
		t.Errorf("pre-flight of free r3: %+v, %v", pf, err)
	}

	// Restart on the same storage: every used id is still refused.
	h.exp.Close()
	h2 := newHarnessOn(t, h.clk, simCfg, Config{MaxRuns: 1, StoragePath: dir})
	for _, id := range []string{"r1", "r2"} {
		if _, err := h2.client.StartPhase(ctx, id, contract.Idle); !phaseapi.IsStatus(err, http.StatusConflict) {
			t.Errorf("reusing %s after a restart: %v, want 409", id, err)
		}
	}
	h2.post("r3", contract.Idle)

	var doc runIDsDoc
	b, err := os.ReadFile(filepath.Join(dir, runIDsFile))
	if err != nil || json.Unmarshal(b, &doc) != nil || strings.Join(doc.RunIDs, ",") != "r1,r2,r3" || doc.Version != 1 {
		t.Errorf("%s = %s (%v), want version 1 with r1,r2,r3", runIDsFile, b, err)
	}
}

// TestRestartRestoresActiveRun: an exporter killed mid-formal and started
// again on the same storage continues the run: earlier phases and the
// formal energy so far are kept, the downtime is a gap without energy, the
// idle baseline is still there, and release detection closes the run.
func TestRestartRestoresActiveRun(t *testing.T) {
	dir := t.TempDir()
	simCfg := gpu.SimConfig{GPUs: 2, Seed: 5, NoiseWatts: 0.2, RampSeconds: 0.5, DecayTau: 1}
	cfg := Config{StoragePath: dir, ReleaseHold: 2 * time.Second}
	h := newHarness(t, simCfg, cfg)
	h.step(time.Second)
	idleAt := h.post("run", contract.Idle)
	h.step(10 * time.Second)
	h.post("run", contract.Startup)
	h.step(2 * time.Second)
	formalAt := h.post("run", contract.Formal)
	h.sim.SetLoad(0.8)
	h.step(20 * time.Second)
	h.exp.saveActive() // the sampler's periodic save
	savedAt := h.clk.Now()
	before, _ := h.exp.RunStatus("run")
	h.step(3 * time.Second) // measured, never saved: lost with the crash
	h.exp.Close()

	h.clk.Advance(7 * time.Second) // down
	h2 := newHarnessOn(t, h.clk, simCfg, cfg)
	h2.sim.SetLoad(0.8)
	restartAt := h.clk.Now()
	st, ok := h2.exp.RunStatus("run")
	if !ok || st.State != phaseapi.RunActive || len(st.Phases) != 3 {
		t.Fatalf("after the restart: %+v (found %v), want the active run with 3 phases", st, ok)
	}
	if st.Phases[0].Start != unixSec(idleAt) || st.Phases[2].Start != unixSec(formalAt) {
		t.Errorf("phase starts %.6f, %.6f, want %.6f, %.6f", st.Phases[0].Start, st.Phases[2].Start, unixSec(idleAt), unixSec(formalAt))
	}
	for k := range 2 {
		if st.Phases[k].EnergyJoules != before.Phases[k].EnergyJoules {
			t.Errorf("%s energy %.3f J after the restart, %.3f J before", st.Phases[k].Phase, st.Phases[k].EnergyJoules, before.Phases[k].EnergyJoules)
		}
	}
	if len(st.Gaps) != 1 || st.Gaps[0].Reason != contract.GapExporterRestarted ||
		math.Abs(st.Gaps[0].Start-unixSec(savedAt)) > 1e-6 || math.Abs(st.Gaps[0].End-unixSec(restartAt)) > 1e-6 {
		t.Errorf("gaps %+v, want one exporter_restarted gap from %.3f to %.3f", st.Gaps, unixSec(savedAt), unixSec(restartAt))
	}
	if st.Idle == nil || len(st.Idle.Baseline) != 2 {
		t.Fatalf("idle baseline lost in the restart: %+v", st.Idle)
	}

	h2.step(10 * time.Second)
	st, _ = h2.exp.RunStatus("run")
	// formal energy = up to the save + after the restart; the gap counts nothing
	for i := range 2 {
		want := h.sim.ExactEnergy(i, formalAt, savedAt) + h2.sim.ExactEnergy(i, restartAt, h2.clk.Now())
		got := st.Phases[2].GPUs[i].EnergyJoules
		if math.Abs(got-want) > 0.01*want {
			t.Errorf("gpu %d formal energy %.1f J, want %.1f J (before the save + after the restart)", i, got, want)
		}
	}
	h2.post("run", contract.Release)
	h2.sim.SetLoad(0)
	for range 600 {
		h2.step(100 * time.Millisecond)
		if st, _ = h2.exp.RunStatus("run"); st.State == phaseapi.RunEnded {
			break
		}
	}
	if st.EndReason != contract.EndReasonReleaseClosed {
		t.Errorf("restored run ended %q (%+v), want release_closed", st.EndReason, st.Release)
	}
	if _, err := h2.client.StartPhase(context.Background(), "run", contract.Idle); !phaseapi.IsStatus(err, http.StatusConflict) {
		t.Errorf("reusing the restored run's id: %v, want 409", err)
	}
}

// TestRunMaxAge: a run left active (its client died) ends as expired and
// frees its active slot.
func TestRunMaxAge(t *testing.T) {
	h := newHarness(t, gpu.SimConfig{GPUs: 1, Seed: 1}, Config{MaxRuns: 1, RunMaxAge: time.Minute})
	h.post("dead", contract.Idle)
	h.step(30 * time.Second)
	h.post("dead", contract.Formal)
	if _, err := h.client.StartPhase(context.Background(), "next", contract.Idle); !phaseapi.IsStatus(err, http.StatusTooManyRequests) {
		t.Fatalf("second run while one is active with --run.max-kept 1: %v, want 429", err)
	}
	h.step(31 * time.Second)
	st, _ := h.exp.RunStatus("dead")
	if st.State != phaseapi.RunEnded || st.EndReason != contract.EndReasonExpired || st.Phases[1].End == nil {
		t.Fatalf("run after its max age: state %s, end reason %q, formal end %v; want ended, expired", st.State, st.EndReason, st.Phases[1].End)
	}
	h.post("next", contract.Idle)
}

// TestBearerAuth: RFC 6750 bearer tokens only (scheme in any case), every
// refusal counted, and logged at most once a second with the remote
// address.
func TestBearerAuth(t *testing.T) {
	var logBuf bytes.Buffer
	h := newHarness(t, gpu.SimConfig{GPUs: 1, Seed: 1}, Config{Logger: slog.New(slog.NewTextHandler(&logBuf, nil))})
	srv := httptest.NewServer(h.exp.Handler())
	defer srv.Close()
	code := func(header, value string) int {
		req, _ := http.NewRequest("GET", srv.URL+"/api/v1/preflight", nil)
		if header != "" {
			req.Header.Set(header, value)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, tc := range []struct {
		header, value string
		want          int
	}{
		{"Authorization", "Bearer " + testToken, 200},
		{"Authorization", "bearer " + testToken, 200},
		{"Authorization", "BEARER  " + testToken, 200},
		{phaseapi.TokenHeader, testToken, 200},
		{"Authorization", testToken, 401},
		{"Authorization", "Basic " + testToken, 401},
		{"Authorization", "Bearer", 401},
		{"Authorization", "Bearer " + testToken + " x", 401},
		{"Authorization", "Bearer " + testToken[:len(testToken)-1], 401},
		{"", "", 401},
	} {
		if got := code(tc.header, tc.value); got != tc.want {
			t.Errorf("%s: %q → %d, want %d", tc.header, tc.value, got, tc.want)
		}
	}
	m := fetchMetricsHandler(t, h.exp)
	if !strings.Contains(m, "joulemark_exporter_auth_failures_total 6\n") {
		t.Errorf("auth failure counter: want 6 in\n%s", grepLines(m, "auth_failures"))
	}
	lines := strings.Count(logBuf.String(), "API request refused")
	if lines != 1 || !strings.Contains(logBuf.String(), "remote_addr=127.0.0.1:") {
		t.Errorf("%d refusal log lines in one burst, want 1 naming the remote address:\n%s", lines, logBuf.String())
	}
	if strings.Contains(logBuf.String(), testToken) {
		t.Error("the token reached the log")
	}
}

// TestRestartKeepsReleaseCriteria: the bench's engine-exit report and the
// idle phase's memory survive a restart in the release, so a strict
// exporter (--release.require-engine-exit) still closes the release, and
// memory still above idle still holds it.
func TestRestartKeepsReleaseCriteria(t *testing.T) {
	dir := t.TempDir()
	simCfg := gpu.SimConfig{GPUs: 2, Seed: 5, NoiseWatts: 0.2, RampSeconds: 0.5, DecayTau: 1}
	cfg := Config{StoragePath: dir, ReleaseHold: 3 * time.Second, ReleaseMaxWait: 60 * time.Second, ReleaseRequireEngineExit: true}
	view := &engineView{}
	h := newHarnessWith(t, simCfg, cfg, func(b gpu.Backend) gpu.Backend { view.Backend = b; return view })
	view.set(0, 0.5)
	h.post("run", contract.Idle)
	h.step(6 * time.Second)
	view.set(1, 70)
	h.post("run", contract.Formal)
	h.sim.SetLoad(0.8)
	h.step(5 * time.Second)
	h.post("run", contract.Release)
	h.sim.SetLoad(0)
	view.set(0, 70) // the engine gone from NVML's list, its memory not yet freed
	h.step(2 * time.Second)
	exitAt := h.clk.Now()
	if _, err := h.client.EngineExited(context.Background(), "run"); err != nil {
		t.Fatal(err)
	}
	h.step(50 * time.Millisecond) // crash before the periodic save: the report saved itself
	h.exp.Close()

	h.clk.Advance(2 * time.Second)
	view2 := &engineView{}
	view2.set(0, 70)
	h2 := newHarnessOnWith(t, h.clk, simCfg, cfg, func(b gpu.Backend) gpu.Backend { view2.Backend = b; return view2 })
	h2.step(8 * time.Second)
	st, _ := h2.exp.RunStatus("run")
	if st.Release.State != phaseapi.ReleaseWaiting || !strings.Contains(st.Release.Reason, "memory") {
		t.Fatalf("release %s (%s) with memory still in use after the restart, want waiting on memory", st.Release.State, st.Release.Reason)
	}
	if c := st.Release.Criteria[0]; !c.Met || c.Basis != phaseapi.BasisEngineExit || c.Since == nil || math.Abs(*c.Since-unixSec(exitAt)) > 0.01 {
		t.Errorf("process criterion after the restart %+v, want met at the reported exit %.3f", c, unixSec(exitAt))
	}
	view2.set(0, 0.5)
	for range 100 {
		h2.step(100 * time.Millisecond)
		if st, _ = h2.exp.RunStatus("run"); st.State == phaseapi.RunEnded {
			break
		}
	}
	if st.Release.State != phaseapi.ReleaseClosed || st.Release.ClosedBy != phaseapi.CriterionMemory {
		t.Errorf("release %s closed by %q (%s), want closed by memory", st.Release.State, st.Release.ClosedBy, st.Release.Reason)
	}
}
