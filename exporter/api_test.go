package exporter

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"

	"github.com/joulemark/joulemark/internal/contract"
	"github.com/joulemark/joulemark/internal/contract/runidtest"
	"github.com/joulemark/joulemark/internal/gpu"
	"github.com/joulemark/joulemark/internal/phaseapi"
)

// The phase API accepts exactly the run ids of the shared table (the bench
// and the demo test the same one).
func TestAPIRunIDs(t *testing.T) {
	h := newHarness(t, gpu.SimConfig{GPUs: 1, Seed: 1}, Config{})
	srv := httptest.NewServer(h.exp.Handler())
	defer srv.Close()
	// No redirects: the mux answers "." and ".." with one.
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, tc := range runidtest.Cases {
		path := srv.URL + "/api/v1/runs/" + url.PathEscape(tc.ID)
		req, err := http.NewRequest("POST", path+"/phases/idle", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+testToken)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		switch {
		case tc.Valid && resp.StatusCode != http.StatusOK:
			t.Errorf("run id %q refused: %d %s", tc.ID, resp.StatusCode, body)
		case !tc.Valid && resp.StatusCode == http.StatusOK:
			t.Errorf("run id %q accepted", tc.ID)
		case !tc.Valid && resp.StatusCode == http.StatusBadRequest && !strings.Contains(string(body), contract.RunIDGrammar):
			t.Errorf("run id %q: answer %s does not state the grammar", tc.ID, body)
		}
		if tc.Valid {
			req, _ := http.NewRequest("POST", path+"/end", nil)
			req.Header.Set("Authorization", "Bearer "+testToken)
			if resp, err := client.Do(req); err != nil || resp.StatusCode != http.StatusOK {
				t.Fatalf("ending run %q: %v %v", tc.ID, resp, err)
			} else {
				resp.Body.Close()
			}
		}
	}
}

func TestAPIErrors(t *testing.T) {
	h := newHarness(t, gpu.SimConfig{GPUs: 2, Seed: 1}, Config{})
	srv := httptest.NewServer(h.exp.Handler())
	defer srv.Close()
	do := func(method, path, token string) (int, string) {
		req, err := http.NewRequest(method, srv.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	// a run in phase formal to test ordering against
	for _, p := range []string{"idle", "formal"} {
		if code, body := do("POST", "/api/v1/runs/r1/phases/"+p, testToken); code != 200 {
			t.Fatalf("POST %s: %d %s", p, code, body)
		}
		h.step(time.Second)
	}
	for _, tc := range []struct {
		name, method, path, token string
		code                      int
		msg                       string
	}{
		{"no token", "POST", "/api/v1/runs/r2/phases/idle", "", 401, "bearer token"},
		{"wrong token", "POST", "/api/v1/runs/r2/phases/idle", "nope", 401, "bearer token"},
		{"no token on end", "POST", "/api/v1/runs/r1/end", "", 401, "bearer token"},
		{"unknown phase", "POST", "/api/v1/runs/r2/phases/cooldown", testToken, 400, "unknown phase"},
		{"bad run id", "POST", "/api/v1/runs/..bad/phases/idle", testToken, 400, "run id"},
		{"out of order", "POST", "/api/v1/runs/r1/phases/warmup", testToken, 409, "cannot follow"},
		{"repeated phase is a retry", "POST", "/api/v1/runs/r1/phases/formal", testToken, 200, `"phase":"formal","start":1750000001,`},
		{"earlier phase", "POST", "/api/v1/runs/r1/phases/idle", testToken, 409, "cannot follow"},
		{"preflight without token", "GET", "/api/v1/preflight", "", 401, "bearer token"},
		{"preflight of a used id", "GET", "/api/v1/preflight?run_id=r1", testToken, 409, "used before"},
		{"preflight of a bad id", "GET", "/api/v1/preflight?run_id=..x", testToken, 400, "run id"},
		{"preflight", "GET", "/api/v1/preflight?run_id=r9", testToken, 200, `"run_id":"r9"`},
		{"unknown run get", "GET", "/api/v1/runs/nope", "", 404, "no run"},
		{"unknown run end", "POST", "/api/v1/runs/nope/end", testToken, 404, "no run"},
		{"wrong method", "GET", "/api/v1/runs/r1/end", "", 405, ""},
		{"get run", "GET", "/api/v1/runs/r1", "", 200, `"phase":"formal"`},
		{"gpus", "GET", "/api/v1/gpus", "", 200, `"energy_source":"integrated"`},
		{"healthz", "GET", "/healthz", "", 200, "Healthy"},
		{"end run", "POST", "/api/v1/runs/r1/end", testToken, 200, `"state":"ended"`},
		{"end again", "POST", "/api/v1/runs/r1/end", testToken, 200, `"state":"ended"`},
		{"phase after end", "POST", "/api/v1/runs/r1/phases/release", testToken, 409, "has ended"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body := do(tc.method, tc.path, tc.token)
			if code != tc.code || !strings.Contains(body, tc.msg) {
				t.Errorf("%s %s: %d %q, want %d containing %q", tc.method, tc.path, code, body, tc.code, tc.msg)
			}
			if code >= 400 && code != 405 {
				var e phaseapi.Error
				if err := json.Unmarshal([]byte(body), &e); err != nil || e.Error == "" {
					t.Errorf("error body %q is not a phaseapi.Error", body)
				}
			}
		})
	}
	if strings.Contains(fetchMetrics(t, srv.URL), testToken) {
		t.Error("the token appears on /metrics")
	}
}

func TestAPIDisabledWithoutToken(t *testing.T) {
	sim, err := gpu.NewSim(gpu.SimConfig{GPUs: 1})
	if err != nil {
		t.Fatal(err)
	}
	e, err := newExp(Config{Backend: sim})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	rec := httptest.NewRecorder()
	req := httptest.NewRequest("POST", "/api/v1/runs/r/phases/idle", nil)
	req.Header.Set("Authorization", "Bearer ")
	e.Handler().ServeHTTP(rec, req)
	if rec.Code != 401 || !strings.Contains(rec.Body.String(), "disabled") {
		t.Errorf("got %d %s, want 401 saying the API is disabled", rec.Code, rec.Body)
	}
}

func TestReleaseTimesOut(t *testing.T) {
	h := newHarness(t, gpu.SimConfig{GPUs: 2, Seed: 3, DecayTau: 5}, Config{ReleaseHold: 5 * time.Second, ReleaseMaxWait: 20 * time.Second})
	h.post("r", contract.Idle)
	h.step(5 * time.Second)
	h.post("r", contract.Formal)
	h.sim.SetLoad(1)
	h.step(10 * time.Second)
	rel := h.post("r", contract.Release) // load stays: power never comes back
	h.step(25 * time.Second)
	st, ok := h.exp.RunStatus("r")
	if !ok {
		t.Fatal("run gone")
	}
	if st.Release.State != phaseapi.ReleaseTimedOut || st.Release.Closed == nil || *st.Release.Closed {
		t.Fatalf("release %+v, want timed out", st.Release)
	}
	if !strings.Contains(st.Release.Reason, "not closed within 20s") || !strings.Contains(st.Release.Reason, "baseline") {
		t.Errorf("reason %q does not say why", st.Release.Reason)
	}
	end := st.Phases[len(st.Phases)-1].End
	if end == nil || Time(*end).Sub(rel) != 20*time.Second {
		t.Errorf("release end %v, want the max wait (20s) after its start", end)
	}
	m := fetchMetricsHandler(t, h.exp)
	if !strings.Contains(m, `joulemark_run_release_closed{run_id="r"} 0`) {
		t.Errorf("no joulemark_run_release_closed 0 in\n%s", m)
	}
}

func TestRunRetentionBounded(t *testing.T) {
	h := newHarness(t, gpu.SimConfig{GPUs: 1, Seed: 3}, Config{MaxRuns: 3})
	for _, id := range []string{"a", "b", "c", "d", "e"} {
		h.post(id, contract.Idle)
		h.step(time.Second)
		if _, err := h.client.EndRun(t.Context(), id); err != nil {
			t.Fatal(err)
		}
	}
	for id, want := range map[string]bool{"a": false, "b": false, "c": true, "d": true, "e": true} {
		if _, ok := h.exp.RunStatus(id); ok != want {
			t.Errorf("run %s kept=%v, want %v", id, ok, want)
		}
	}
	// active runs are bounded too
	for _, id := range []string{"x1", "x2", "x3"} {
		h.post(id, contract.Idle)
	}
	if _, err := h.client.StartPhase(t.Context(), "x4", contract.Idle); !phaseapi.IsStatus(err, http.StatusTooManyRequests) {
		t.Errorf("4th active run with MaxRuns 3: %v, want 429", err)
	}
}

func fetchMetrics(t *testing.T, base string) string {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

func fetchMetricsHandler(t *testing.T, e *Exporter) string {
	t.Helper()
	rec := httptest.NewRecorder()
	e.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != 200 {
		t.Fatalf("/metrics: %d", rec.Code)
	}
	return rec.Body.String()
}

func TestIdleStability(t *testing.T) {
	for _, tc := range []struct {
		name   string
		during func(h *harness)
		stable bool
		reason string
	}{
		{"quiet", func(h *harness) {}, true, ""},
		{"busy GPU", func(h *harness) { _ = h.sim.SetGPULoad(1, 0.3) }, false, "gpu 1: 1 compute process"},
		{"load swings", func(h *harness) {
			for k := range 10 {
				h.sim.SetLoad(float64(k%2) * 0.5)
				h.step(500 * time.Millisecond)
			}
			h.sim.SetLoad(0)
		}, false, "power CV"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, gpu.SimConfig{GPUs: 2, Seed: 5, NoiseWatts: 0.5}, Config{})
			h.post("r", contract.Idle)
			tc.during(h)
			h.step(5 * time.Second)
			h.post("r", contract.Startup)
			h.step(time.Second)
			st, _ := h.exp.RunStatus("r")
			if st.Idle == nil {
				t.Fatal("no idle status after the idle phase")
			}
			if st.Idle.Stable != tc.stable || !strings.Contains(st.Idle.Reason, tc.reason) {
				t.Errorf("idle stable=%v reason %q, want %v containing %q", st.Idle.Stable, st.Idle.Reason, tc.stable, tc.reason)
			}
			want := "joulemark_run_idle_stable{run_id=\"r\"} " + map[bool]string{true: "1", false: "0"}[tc.stable]
			if m := fetchMetricsHandler(t, h.exp); !strings.Contains(m, want) {
				t.Errorf("/metrics lacks %s", want)
			}
		})
	}
}

// TestFrozenRunsServeTheSameSeries checks that serving finished runs from
// their cache gives exactly the exposition the collectors give.
func TestFrozenRunsServeTheSameSeries(t *testing.T) {
	h := newHarness(t, gpu.SimConfig{GPUs: 3, Seed: 9, NoiseWatts: 0.5}, Config{MaxRuns: 4})
	for _, id := range []string{"b-run", "d-run", "a-run", "c-run", "e-run", "f-run"} {
		h.post(id, contract.Idle)
		h.step(time.Second)
		h.post(id, contract.Formal)
		h.sim.SetLoad(0.5)
		h.step(time.Second)
		h.sim.SetLoad(0)
		if id != "f-run" {
			if _, err := h.client.EndRun(t.Context(), id); err != nil {
				t.Fatal(err)
			}
		}
	}
	h.step(time.Second)
	render := func() string {
		mfs, err := h.exp.Gatherer().Gather()
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		for _, mf := range mfs {
			if _, err := expfmt.MetricFamilyToText(&b, mf); err != nil {
				t.Fatal(err)
			}
		}
		return b.String()
	}
	h.exp.mu.Lock()
	frozen := 0
	for _, r := range h.exp.lc.runs {
		if r.frozen != nil {
			frozen++
		}
	}
	h.exp.mu.Unlock()
	if frozen != 4 {
		t.Fatalf("%d runs frozen, want the 4 kept finished runs", frozen)
	}
	cached := render()
	h.exp.mu.Lock()
	for _, r := range h.exp.lc.runs {
		r.frozen = nil
	}
	h.exp.frozenVersion++
	h.exp.mu.Unlock()
	if live := render(); live != cached {
		t.Errorf("frozen rendering differs from the live one:\n--- frozen\n%s\n--- live\n%s", cached, live)
	}
	if !strings.Contains(cached, `run_id="f-run"`) || strings.Contains(cached, `run_id="b-run"`) {
		t.Error("wrong runs retained")
	}
}
