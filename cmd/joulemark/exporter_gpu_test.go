package main

import (
	"context"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/joulemark/joulemark/internal/testenv"
	"github.com/joulemark/joulemark/internal/testnet"
	"github.com/joulemark/joulemark/phaseapi"
)

// waitReady polls the exporter at base until /-/ready answers 200 (10 s at
// most), failing t when it never does or exits first (done).
func waitReady(t *testing.T, base string, done <-chan error) {
	t.Helper()
	for i := 0; ; i++ {
		select {
		case err := <-done:
			t.Fatalf("exporter exited: %v", err)
		default:
		}
		if resp, err := http.Get(base + "/-/ready"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return
			}
		}
		if i > 500 {
			t.Fatal("exporter never became ready")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// startExporter runs `joulemark exporter` in process with args (plus a
// listen address and a token) until the test ends, and returns its base URL
// and a phase API client once it is ready.
func startExporter(t *testing.T, args ...string) (string, *phaseapi.Client) {
	t.Helper()
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte("gpu-test-token-not-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := testnet.FreeAddr(t)
	cli := parseCLI(t, append([]string{"exporter", "--web.listen-address=" + addr, "--web.api-token-file=" + tokenFile, "--storage.path=" + filepath.Join(dir, "data")}, args...)...)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- cli.Exporter.run(ctx, slog.New(slog.DiscardHandler)) }()
	t.Cleanup(func() {
		cancel()
		if t.Failed() {
			return
		}
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("exporter after shutdown: %v", err)
			}
		case <-time.After(15 * time.Second):
			t.Error("exporter did not shut down")
		}
	})
	base := "http://" + addr
	waitReady(t, base, done)
	client, err := phaseapi.NewClient(base, "gpu-test-token-not-secret", nil)
	if err != nil {
		t.Fatal(err)
	}
	return base, client
}

// TestExporterReleaseClosesWithCounterBeat is a regression test: an energy
// counter updating every 95 ms (with jitter), against a 100 ms
// sampler, at a perfectly steady idle; the release timed out ("gpu 0 at
// 66.4 W, baseline 70.0 W") when it was judged from the counter's
// staircase.
func TestExporterReleaseClosesWithCounterBeat(t *testing.T) {
	testenv.SkipIfShort(t, "runs an exporter for ~8 s of real time")
	_, client := startExporter(t, "--gpu=sim", "--gpus=2", "--sim.energy-counter", "--sim.counter-period=95ms",
		"--sim.counter-jitter=3ms", "--sim.noise-watts=0", "--release.hold=2s", "--release.max-wait=20s")
	ctx := t.Context()
	for _, p := range []phaseapi.Phase{phaseapi.Idle, phaseapi.Formal, phaseapi.Release} {
		if _, err := client.StartPhase(ctx, "beat", p); err != nil {
			t.Fatalf("phase %s: %v", p, err)
		}
		if p == phaseapi.Idle {
			time.Sleep(3 * time.Second)
		}
	}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	st, err := client.WaitRelease(wctx, "beat", 100*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if st.Release.State != phaseapi.ReleaseClosed {
		t.Errorf("release %s (%s), want closed at a steady idle", st.Release.State, st.Release.Reason)
	}
}

// TestExporterHungGPUFailsHealthz: with --sim.hang-gpu the exporter's
// /healthz turns 503 once that GPU's read has hung for 5 intervals.
func TestExporterHungGPUFailsHealthz(t *testing.T) {
	base, _ := startExporter(t, "--gpu=sim", "--gpus=2", "--sample.interval=20ms", "--sim.hang-gpu=1", "--sim.hang-after=200ms")
	for i := 0; ; i++ {
		resp, err := http.Get(base + "/healthz")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusServiceUnavailable {
			break
		}
		if i > 500 {
			t.Fatalf("/healthz still %d 10 s after GPU 1 hung", resp.StatusCode)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
