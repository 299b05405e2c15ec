package exporter

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/joulemark/joulemark/internal/gpu"
)

// TestOpenBackendRefuses: backend settings that cannot work fail before
// the exporter starts, naming the flag.
func TestOpenBackendRefuses(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	sim := BackendConfig{Kind: BackendSim, GPUs: 2, SimHangGPU: -1, SimDownGPU: -1, Interval: 100 * time.Millisecond}
	for _, tc := range []struct {
		name string
		mod  func(*BackendConfig)
		want string
	}{
		{"unknown kind", func(c *BackendConfig) { c.Kind = "amd" }, `GPU backend "amd"`},
		{"engine url with nvml", func(c *BackendConfig) { c.Kind, c.SimEngineURLs = BackendNVML, []string{"http://x:1"} }, "--sim.engine-url needs --gpu=sim"},
		{"hang with nvml", func(c *BackendConfig) { c.Kind, c.SimHangGPU = BackendNVML, 0 }, "need --gpu=sim"},
		{"hang beyond the GPUs", func(c *BackendConfig) { c.SimHangGPU = 2 }, "--sim.hang-gpu 2: there are 2"},
		{"pod engine without allocations", func(c *BackendConfig) { c.SimEngineURLs = []string{"ns/p=http://127.0.0.1:1"} }, "needs --sim.allocations"},
		{"pod engine not allocated", func(c *BackendConfig) {
			c.SimEngineURLs, c.SimAllocations = []string{"ns/p=http://127.0.0.1:1"}, "ns/q=0"
		}, "pod ns/p is not in --sim.allocations"},
		{"bad simulator", func(c *BackendConfig) { c.Sim.MaxWatts = 10 }, "max power"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := sim
			tc.mod(&c)
			b, _, err := OpenBackend(t.Context(), c, log)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				if b != nil {
					b.Close()
				}
				t.Errorf("%v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// TestOpenPods: attribution is off without a socket, and simulated
// allocations need the simulated backend and parse against its GPUs.
func TestOpenPods(t *testing.T) {
	devs := []gpu.Device{{Index: 0, UUID: "GPU-a"}, {Index: 1, UUID: "GPU-b"}}
	pc, closeFn, err := OpenPods(KubeletConfig{}, false, devs)
	if err != nil || pc != nil {
		t.Fatalf("no socket: %v, %v; want attribution off", pc, err)
	}
	closeFn()
	if _, _, err := OpenPods(KubeletConfig{SimAllocations: "ns/p=0"}, false, devs); err == nil || !strings.Contains(err.Error(), "needs --gpu=sim") {
		t.Errorf("simulated allocations on nvml: %v", err)
	}
	if _, _, err := OpenPods(KubeletConfig{SimAllocations: "ns/p=5"}, true, devs); err == nil || !strings.Contains(err.Error(), "--sim.allocations") {
		t.Errorf("allocation of a GPU that does not exist: %v", err)
	}
	pc, closeFn, err = OpenPods(KubeletConfig{SimAllocations: "ns/p=0,1", Refresh: time.Second}, true, devs)
	if err != nil || pc == nil || pc.Lister == nil {
		t.Fatalf("simulated kubelet: %v, %v", pc, err)
	}
	closeFn()
}

// TestMainServesUntilCanceled: Main opens the simulated backend, serves,
// and shuts down cleanly when its context ends.
func TestMainServesUntilCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	cfg := Defaults()
	cfg.Interval, cfg.StoragePath = 10*time.Millisecond, t.TempDir()
	go func() {
		done <- Main(ctx, Options{
			Backend:       BackendConfig{Kind: BackendSim, GPUs: 1, SimHangGPU: -1, SimDownGPU: -1, Interval: 10 * time.Millisecond},
			Config:        cfg,
			ListenAddress: "127.0.0.1:0",
		}, slog.New(slog.DiscardHandler))
	}()
	time.Sleep(100 * time.Millisecond)
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Main: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Main did not return after its context ended")
	}
}
