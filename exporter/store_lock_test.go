package exporter

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/joulemark/joulemark/internal/contract"
	"github.com/joulemark/joulemark/internal/gpu"
	"github.com/joulemark/joulemark/internal/phaseapi"
)

// TestStorageLockedByOneExporter: a second exporter on a state directory
// in use refuses to start, naming the holder's pid and the lock file, and
// leaves the state files as they were; once the first closes, the
// directory is free again.
func TestStorageLockedByOneExporter(t *testing.T) {
	dir := t.TempDir()
	clk := newFakeClock()
	sim := func() gpu.Backend {
		s, err := gpu.NewSim(gpu.SimConfig{GPUs: 1, Seed: 1, Clock: clk})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	e1, err := newExp(Config{Backend: sim(), Clock: clk, StoragePath: dir, APIToken: testToken})
	if err != nil {
		t.Fatal(err)
	}
	e1.SampleOnce()
	e1.saveActive()
	before := readStateFiles(t, dir)
	e2, err := newExp(Config{Backend: sim(), Clock: clk, StoragePath: dir, APIToken: testToken})
	if err == nil {
		e2.Close()
		t.Fatal("a second exporter started on a state directory in use")
	}
	pid := "pid " + strconv.Itoa(os.Getpid())
	if !errors.Is(err, errStorageLocked) || !strings.Contains(err.Error(), pid) || !strings.Contains(err.Error(), filepath.Join(dir, lockFile)) {
		t.Errorf("second exporter: %v, want it refused naming the holder (%s) and the lock file", err, pid)
	}
	if after := readStateFiles(t, dir); after != before {
		t.Errorf("the refused exporter changed the state files:\n%s\nwant\n%s", after, before)
	}
	e1.Close()
	e3, err := newExp(Config{Backend: sim(), Clock: clk, StoragePath: dir, APIToken: testToken})
	if err != nil {
		t.Fatalf("after the first exporter closed: %v", err)
	}
	e3.Close()
}

// readStateFiles is the state files' content, for comparisons.
func readStateFiles(t *testing.T, dir string) string {
	t.Helper()
	var out strings.Builder
	for _, name := range []string{runIDsFile, activeRunsFile} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		out.WriteString(name + ": " + string(b) + "\n")
	}
	return out.String()
}

// TestMainBindFailureWritesNoState: an exporter whose address is taken
// exits with the bind error and leaves the state of the exporter before it
// untouched: no clean mark withdrawn, no shutdown save over it.
func TestMainBindFailureWritesNoState(t *testing.T) {
	dir := t.TempDir()
	clk := newFakeClock()
	sim, err := gpu.NewSim(gpu.SimConfig{GPUs: 1, Seed: 1, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	e1, err := newExp(Config{Backend: sim, Clock: clk, StoragePath: dir, APIToken: testToken})
	if err != nil {
		t.Fatal(err)
	}
	saveRunR(t, e1, true, func(e *Exporter, d time.Duration) {
		for range int(d / (100 * time.Millisecond)) {
			clk.Advance(100 * time.Millisecond)
			e.SampleOnce()
		}
	})
	before := readStateFiles(t, dir)
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	cfg := Defaults()
	cfg.Interval, cfg.StoragePath, cfg.APIToken = 10*time.Millisecond, dir, testToken
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	err = Main(ctx, Options{
		Backend:       BackendConfig{Kind: BackendSim, GPUs: 1, SimHangGPU: -1, SimDownGPU: -1, Interval: 10 * time.Millisecond},
		Config:        cfg,
		ListenAddress: taken.Addr().String(),
	}, slog.New(slog.DiscardHandler))
	if err == nil || !strings.Contains(err.Error(), taken.Addr().String()) {
		t.Fatalf("Main on a taken address: %v, want the bind error", err)
	}
	if after := readStateFiles(t, dir); after != before {
		t.Errorf("an exporter that failed to bind wrote the state:\n%s\nwant\n%s", after, before)
	}
}

// TestCrashAfterGracefulRestart: a graceful shutdown's save is marked
// clean; the exporter started on it serves more energy, then dies before
// any save of its own (killed, or every save failing on a full disk). The
// exporter after it must not continue from the clean save, below what was
// served: its counter continues at or above the served value (the GPU's
// own counter bridges the downtime) or starts again from 0 (a reset). The
// integrated cases fail without Begin; the counter cases show the bridge
// still works from the unmarked save.
func TestCrashAfterGracefulRestart(t *testing.T) {
	for _, tc := range []struct {
		name          string
		counter       bool
		savesFail     bool
		wantContinued bool
	}{
		{"integrated energy, killed", false, false, false},
		{"integrated energy, saves failing", false, true, false},
		{"GPU energy counter, killed", true, false, true},
		{"GPU energy counter, saves failing", true, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := newFakeClock()
			sim, err := gpu.NewSim(gpu.SimConfig{GPUs: 1, Seed: 3, NoiseWatts: 0.5, EnergyCounter: tc.counter, Clock: clk})
			if err != nil {
				t.Fatal(err)
			}
			back := keepOpen{offsetCounter{sim, 1e6}}
			dir := t.TempDir()
			step := func(e *Exporter, d time.Duration) {
				for range int(d / (100 * time.Millisecond)) {
					clk.Advance(100 * time.Millisecond)
					e.SampleOnce()
				}
			}
			e1, err := newExp(Config{Backend: back, Clock: clk, StoragePath: dir, APIToken: testToken})
			if err != nil {
				t.Fatal(err)
			}
			doc := saveRunR(t, e1, true, step)
			e2, err := newExp(Config{Backend: back, Clock: clk, StoragePath: dir, APIToken: testToken})
			if err != nil {
				t.Fatal(err)
			}
			if err := e2.Begin(); err != nil {
				t.Fatal(err)
			}
			if tc.savesFail {
				e2.store.writeFile = func(string, []byte) error { return errors.New("no space left on device") }
			}
			step(e2, 5*time.Second)
			if tc.savesFail {
				e2.saveActive() // fails: the disk is full
			}
			served := gatheredEnergy(t, e2)
			if served <= doc.GPUs[0].EnergyJoules+100 {
				t.Fatalf("served %.1f J after the restart, want well above the clean save's %.1f J", served, doc.GPUs[0].EnergyJoules)
			}
			e2.Close() // never started: no shutdown save, as a SIGKILL
			step(e2, time.Second)
			e3, err := newExp(Config{Backend: back, Clock: clk, StoragePath: dir, APIToken: testToken})
			if err != nil {
				t.Fatal(err)
			}
			defer e3.Close()
			e3.SampleOnce()
			got := gatheredEnergy(t, e3)
			switch {
			case tc.wantContinued && !(got >= served):
				t.Errorf("counter %.1f J after the crash, below the %.1f J served before it (clean save %.1f J)", got, served, doc.GPUs[0].EnergyJoules)
			case !tc.wantContinued && got != 0 && !(got >= served):
				t.Errorf("counter %.1f J after the crash: neither a reset to 0 nor at least the %.1f J served before it (clean save %.1f J)",
					got, served, doc.GPUs[0].EnergyJoules)
			case math.IsNaN(got):
				t.Errorf("counter %v", got)
			}
		})
	}
}

// TestEngineExitedDurable: the bench's engine-exit report is saved before
// it is acknowledged; when the save fails it is answered 503 and not
// applied (as a phase change), and the retry is saved.
func TestEngineExitedDurable(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	h := newHarness(t, gpu.SimConfig{GPUs: 1, Seed: 1}, Config{StoragePath: dir})
	h.post("r", contract.Idle)
	h.step(time.Second)
	h.post("r", contract.Formal)
	h.step(time.Second)
	h.post("r", contract.Release)
	fail := true
	failWrites(h.exp, activeRunsFile, &fail)
	exited := func() bool {
		h.exp.mu.RLock()
		defer h.exp.mu.RUnlock()
		return h.exp.lc.runs["r"].crit.engineExited
	}
	saved := func() bool {
		b, err := os.ReadFile(filepath.Join(dir, activeRunsFile))
		if err != nil {
			t.Fatal(err)
		}
		return strings.Contains(string(b), "engine_exited_unix_ns")
	}
	if _, err := h.client.EngineExited(ctx, "r"); !phaseapi.IsStatus(err, http.StatusServiceUnavailable) {
		t.Fatalf("engine exit with the disk failing: %v, want 503", err)
	}
	if exited() || saved() {
		t.Errorf("the refused engine exit: applied %v, saved %v; want neither", exited(), saved())
	}
	fail = false
	if _, err := h.client.EngineExited(ctx, "r"); err != nil {
		t.Fatal(err)
	}
	if !exited() || !saved() {
		t.Errorf("the retried engine exit: applied %v, saved %v; want both", exited(), saved())
	}
}
