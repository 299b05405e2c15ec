package e2e

// Faults of the exporter's durable state, against the joulemark binary:
// restarts graceful and SIGKILLed, state files that cannot be trusted, a
// disk that refuses a write.

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/joulemark/joulemark/internal/contract"
	"github.com/joulemark/joulemark/internal/phaseapi"
	"github.com/joulemark/joulemark/internal/testkit/realprom"
	"github.com/joulemark/joulemark/internal/testkit/testnet"
)

// servedEnergy is each GPU's joulemark_gpu_energy_joules_total on the
// exporter's /metrics, by gpu label (a GPU absent: not served).
func servedEnergy(t *testing.T, base string) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	for _, l := range strings.Split(fetch(t, base+"/metrics"), "\n") {
		if !strings.HasPrefix(l, "joulemark_gpu_energy_joules_total{") {
			continue
		}
		_, rest, _ := strings.Cut(l, `gpu="`)
		gpu, _, _ := strings.Cut(rest, `"`)
		v, err := strconv.ParseFloat(l[strings.LastIndexByte(l, ' ')+1:], 64)
		if err != nil {
			t.Fatalf("metric line %q: %v", l, err)
		}
		out[gpu] = v
	}
	return out
}

// stopExporter sends sig to the exporter and waits for it to exit.
func (f *faultEnv) stopExporter(t *testing.T, sig syscall.Signal) {
	t.Helper()
	_ = f.exp.cmd.Process.Signal(sig)
	select {
	case <-f.exp.exited:
	case <-time.After(15 * time.Second):
		t.Fatalf("exporter did not exit on %v", sig)
	}
}

// TestFaultCounterAcrossRestarts: the GPU energy counter never goes below
// a value it served across a restart of the exporter binary. After SIGTERM
// it continues from the last value; after SIGKILL (the last periodic save
// older than the last value served, the simulator's own counter restarted
// with the process, as a driver reload) it starts again from 0, a reset
// Prometheus handles, never from the stale save; with and without an
// active run, whose energy goes on.
func TestFaultCounterAcrossRestarts(t *testing.T) {
	for _, tc := range []struct {
		name   string
		sig    syscall.Signal
		active bool
	}{
		{"SIGTERM idle", syscall.SIGTERM, false},
		{"SIGTERM active run", syscall.SIGTERM, true},
		{"SIGKILL idle", syscall.SIGKILL, false},
		{"SIGKILL active run", syscall.SIGKILL, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFaultDirs(t)
			// 600 W per GPU before the restart, 70 W after: a stale base
			// (≈ 1 kJ) is far above what a fresh count can reach.
			f.start(t, "--storage.save-interval=1s", "--sim.startup-watts=650", "--sim.idle-watts=600")
			c := f.client(t)
			ctx := context.Background()
			if tc.active {
				if _, err := c.StartPhase(ctx, "cr-1", contract.Idle); err != nil {
					t.Fatal(err)
				}
			}
			time.Sleep(2500 * time.Millisecond) // a periodic save or two, then more energy served
			last := servedEnergy(t, f.expURL)
			var before *phaseapi.RunStatus
			if tc.active {
				var err error
				if before, err = c.Run(ctx, "cr-1"); err != nil {
					t.Fatal(err)
				}
			}
			f.stopExporter(t, tc.sig)
			f.exporterArgs[len(f.exporterArgs)-1] = "--sim.idle-watts=70"
			began := time.Now()
			f.startExporter(t)
			got := servedEnergy(t, f.expURL)
			fresh := time.Since(began).Seconds() * 75 // 0 at the restart, 70 W idle since
			if len(got) != 2 {
				t.Fatalf("served after the restart: %v, want both GPUs", got)
			}
			for gpu, v := range got {
				switch {
				case tc.sig == syscall.SIGTERM && v < last[gpu]:
					t.Errorf("gpu %s: %.1f J after SIGTERM and restart, below the %.1f J served before", gpu, v, last[gpu])
				case tc.sig == syscall.SIGKILL && v < last[gpu] && v > fresh:
					t.Errorf("gpu %s: %.1f J after SIGKILL and restart: below the %.1f J served before and not a reset (≤ %.0f J)", gpu, v, last[gpu], fresh)
				}
			}
			if tc.active {
				st, err := c.Run(ctx, "cr-1")
				if err != nil {
					t.Fatal(err)
				}
				if st.State != phaseapi.RunActive || len(st.Gaps) != 1 || st.Phases[0].EnergyJoules < 0.5*before.Phases[0].EnergyJoules {
					t.Errorf("run after the restart: %s, gaps %v, idle energy %.1f J (%.1f J before); want active, one gap, energy kept",
						st.State, st.Gaps, st.Phases[0].EnergyJoules, before.Phases[0].EnergyJoules)
				}
			}
		})
	}
}

// TestFaultStateFileRefused: an exporter whose run_ids.json is well-formed
// JSON but not its schema ({} here) refuses to start, exit 1, naming the
// file and the recovery, instead of forgetting every used run id.
func TestFaultStateFileRefused(t *testing.T) {
	f := newFaultDirs(t)
	if err := os.MkdirAll(f.storage, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, body := range []string{`{}`, `{"version":1,"run_ids":null}`, `{"version":99,"ids":["r1"]}`} {
		if err := os.WriteFile(filepath.Join(f.storage, "run_ids.json"), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		r := runJoulemark(t, 30*time.Second, f.bin, "exporter", "--gpu=sim", "--gpus=1", "--web.listen-address="+f.expAddr,
			"--storage.path="+f.storage)
		if r.code != 1 || !strings.Contains(r.stderr, filepath.Join(f.storage, "run_ids.json")) || !strings.Contains(r.stderr, "mv ") {
			t.Errorf("run_ids.json %s: exit %d, want 1 naming the file and the recovery:\n%s", body, r.code, tail(r.stderr, 2000))
		}
	}
}

// TestFaultStateWriteRefused: when active_runs.json cannot be written (a
// directory took its name), a phase POST is answered 503 and not applied;
// once the disk is writable again the bench's retry succeeds.
func TestFaultStateWriteRefused(t *testing.T) {
	f := newFaultDirs(t)
	f.start(t)
	c := f.client(t)
	ctx := context.Background()
	if _, err := c.StartPhase(ctx, "wr-1", contract.Idle); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(f.storage, "active_runs.json")
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(path, "blocker"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := c.StartPhase(ctx, "wr-1", contract.Startup); !phaseapi.IsStatus(err, http.StatusServiceUnavailable) {
		t.Fatalf("phase change with active_runs.json unwritable: %v, want 503", err)
	}
	if st, err := c.Run(ctx, "wr-1"); err != nil || len(st.Phases) != 1 {
		t.Fatalf("after the refused change: %+v, %v; want idle only", st, err)
	}
	if err := os.RemoveAll(path); err != nil {
		t.Fatal(err)
	}
	if _, err := c.StartPhase(ctx, "wr-1", contract.Startup); err != nil {
		t.Fatalf("retry once writable: %v", err)
	}
	f.stopExporter(t, syscall.SIGTERM)
	f.startExporter(t)
	if st, err := c.Run(ctx, "wr-1"); err != nil || len(st.Phases) != 2 {
		t.Errorf("after a restart: %+v, %v; want idle and startup", st, err)
	}
}

// TestFaultTSDBServeLivePrometheus: `tsdb serve
// --storage.writable` on the data directory of a running Prometheus
// (Debian's 2.42, which leaves no lock file) is refused, exit 1, naming
// --storage.force, and writes nothing there.
func TestFaultTSDBServeLivePrometheus(t *testing.T) {
	f := newFaultDirs(t)
	p := realprom.Start(t, realprom.DefaultConfig)
	time.Sleep(3 * time.Second) // a WAL write or two
	wal := func() []string {
		entries, _ := os.ReadDir(filepath.Join(p.DataDir, "wal"))
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		return names
	}
	before := wal()
	r := runJoulemark(t, 30*time.Second, f.bin, "tsdb", "serve", "--storage.tsdb.path="+p.DataDir, "--storage.writable",
		"--web.listen-address="+testnet.FreeAddr(t))
	if r.code != 1 || !strings.Contains(r.stderr, "in use") || !strings.Contains(r.stderr, "--storage.force") {
		t.Errorf("tsdb serve --storage.writable on a live Prometheus: exit %d, want 1 naming --storage.force:\n%s", r.code, tail(r.stderr, 2000))
	}
	if after := wal(); strings.Join(after, ",") != strings.Join(before, ",") {
		t.Errorf("WAL segments %v became %v: the refused serve wrote there", before, after)
	}
}
