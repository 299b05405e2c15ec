package phaseapi

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/joulemark/joulemark/internal/contract"
)

func TestClientSendsTokenAndDecodes(t *testing.T) {
	var polls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer s3cret" {
			w.WriteHeader(http.StatusUnauthorized)
			_ = json.NewEncoder(w).Encode(Error{Error: "missing or wrong bearer token"})
			return
		}
		switch {
		case r.Method == http.MethodPost && r.URL.Path == "/api/v1/runs/run-1/phases/formal":
			_ = json.NewEncoder(w).Encode(RunStatus{RunID: "run-1", State: RunActive, Phases: []PhaseStatus{{Phase: contract.Formal, Start: 12.5, Active: true}}})
		case r.Method == http.MethodPost && r.URL.Path == "/api/v1/runs/run-1/phases/release":
			w.WriteHeader(http.StatusConflict)
			_ = json.NewEncoder(w).Encode(Error{Error: "phase release out of order"})
		case r.Method == http.MethodGet && r.URL.Path == "/api/v1/runs/run-1":
			st := RunStatus{RunID: "run-1", Release: ReleaseStatus{State: ReleaseWaiting}}
			if polls.Add(1) >= 3 {
				st.Release.State = ReleaseClosed
			}
			_ = json.NewEncoder(w).Encode(st)
		case r.Method == http.MethodGet && r.URL.Path == "/api/v1/gpus":
			_ = json.NewEncoder(w).Encode([]GPUInfo{{GPU: 0, UUID: "GPU-0", Name: "sim"}})
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()

	c, err := NewClient(srv.URL+"/", "s3cret", nil)
	if err != nil {
		t.Fatal(err)
	}
	st, err := c.StartPhase(ctx, "run-1", contract.Formal)
	if err != nil || len(st.Phases) != 1 || st.Phases[0].Start != 12.5 {
		t.Fatalf("StartPhase = %+v, %v", st, err)
	}
	_, err = c.StartPhase(ctx, "run-1", contract.Release)
	if !IsStatus(err, http.StatusConflict) || !strings.Contains(err.Error(), "out of order") {
		t.Fatalf("out-of-order error = %v, want a 409 carrying the server's message", err)
	}
	st, err = c.WaitRelease(ctx, "run-1", time.Millisecond)
	if err != nil || st.Release.State != ReleaseClosed || polls.Load() != 3 {
		t.Fatalf("WaitRelease = %+v, %v after %d polls", st.Release, err, polls.Load())
	}
	gpus, err := c.GPUs(ctx)
	if err != nil || len(gpus) != 1 || gpus[0].UUID != "GPU-0" {
		t.Fatalf("GPUs = %+v, %v", gpus, err)
	}

	bad, _ := NewClient(srv.URL, "n0t-the-t0ken", nil)
	_, err = bad.Run(ctx, "run-1")
	if !IsStatus(err, http.StatusUnauthorized) {
		t.Fatalf("wrong token: err = %v, want 401", err)
	}
	if strings.Contains(err.Error(), "n0t-the-t0ken") {
		t.Fatalf("error leaks the token: %v", err)
	}
}

func TestNewClientRejectsBadURL(t *testing.T) {
	for _, u := range []string{"", "localhost:9402", "://x"} {
		if _, err := NewClient(u, "", nil); err == nil {
			t.Errorf("NewClient(%q) accepted a bad URL", u)
		}
	}
}
