package exporter

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/joulemark/joulemark/internal/gpu"
	"github.com/joulemark/joulemark/internal/phaseapi"
)

// FuzzPhaseAPI drives the exporter's HTTP API with a script of requests,
// one a line: "P <target> <body>" posts, "G <target>" gets, with the
// token. Whatever the script, no handler panics or answers 500 (an error
// it did not foresee), a 2xx run answer is a run status, and /metrics
// serves after every request.
func FuzzPhaseAPI(f *testing.F) {
	for _, seed := range []string{
		"P /api/v1/runs/r1/phases/idle\nP /api/v1/runs/r1/phases/startup\nP /api/v1/runs/r1/phases/warmup\nP /api/v1/runs/r1/phases/formal\nP /api/v1/runs/r1/phases/release\nP /api/v1/runs/r1/end\nG /api/v1/runs/r1",
		"P /api/v1/runs/r2/phases/formal {\"gpus\":[\"GPU-5e000000-0000-4000-8000-000000000001\"]}\nP /api/v1/runs/r2/engine-exited\nG /api/v1/runs/r2\nP /api/v1/runs/r2/end",
		"P /api/v1/runs/r3/phases/idle {\"pod\":\"ns/p\"}\nG /api/v1/preflight?run_id=r3&pod=ns/p\nG /api/v1/gpus",
		"P /api/v1/runs/r1/phases/formal\nP /api/v1/runs/r1/phases/idle\nP /api/v1/runs/r1/end\nP /api/v1/runs/r1/phases/formal",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, script string) {
		clk := newFakeClock()
		sim, err := gpu.NewSim(gpu.SimConfig{GPUs: 2, Seed: 1, EnergyCounter: true, Clock: clk})
		if err != nil {
			t.Fatal(err)
		}
		e, err := newExp(Config{Backend: sim, Clock: clk, StoragePath: t.TempDir(), APIToken: testToken})
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		h := e.Handler()
		lines := strings.Split(script, "\n")
		for _, line := range lines[:min(len(lines), 12)] {
			clk.Advance(100 * time.Millisecond)
			e.SampleOnce()
			apiRequest(t, h, line)
			w := httptest.NewRecorder()
			h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/metrics", nil))
			if w.Code != http.StatusOK {
				t.Fatalf("/metrics after %q: HTTP %d %s", line, w.Code, w.Body)
			}
		}
	})
}

// apiRequest sends one script line and checks its answer.
func apiRequest(t *testing.T, h http.Handler, line string) {
	kind, rest, _ := strings.Cut(line, " ")
	target, body, _ := strings.Cut(rest, " ")
	method := http.MethodGet
	if kind == "P" {
		method = http.MethodPost
	}
	if !strings.HasPrefix(target, "/") {
		target = "/" + target
	}
	req, err := http.NewRequest(method, "http://exporter"+target, strings.NewReader(body))
	if err != nil {
		return // not a request a client can send
	}
	req.Header.Set("Authorization", "Bearer "+testToken)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	if w.Code >= 500 && w.Code != http.StatusServiceUnavailable {
		t.Fatalf("%s %s %q: HTTP %d %s", method, target, body, w.Code, w.Body)
	}
	if w.Code/100 == 2 && strings.HasPrefix(req.URL.Path, "/api/v1/runs/") {
		var st phaseapi.RunStatus
		if err := json.Unmarshal(w.Body.Bytes(), &st); err != nil || st.RunID == "" {
			t.Fatalf("%s %s: HTTP %d with %q, not a run status (%v)", method, target, w.Code, w.Body, err)
		}
	}
}
