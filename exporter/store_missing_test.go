package exporter

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/joulemark/joulemark/exporter/phaseapi"
	"github.com/joulemark/joulemark/internal/contract"
	"github.com/joulemark/joulemark/internal/gpu"
)

// notOpen is a backend whose GPU i failed to open: listed without a UUID,
// its reads fail.
type notOpen struct {
	gpu.Backend
	i int
}

func (n notOpen) Devices() []gpu.Device {
	ds := slices.Clone(n.Backend.Devices())
	ds[n.i].UUID, ds[n.i].Err = "", "GPU failed to open (test)"
	return ds
}

func (n notOpen) Sample(i int) (gpu.Sample, error) {
	if i == n.i {
		return gpu.Sample{}, errors.New("GPU not open (test)")
	}
	return n.Backend.Sample(i)
}

// TestRestartWithGPUNotOpen: after a restart where one GPU fails to open,
// the active runs measuring only the other GPUs are restored; a run
// measuring the missing GPU is not (its identity cannot be checked) and
// its id stays used. Before, the empty UUID read as "the GPUs changed" and
// no run came back.
func TestRestartWithGPUNotOpen(t *testing.T) {
	dir := t.TempDir()
	simCfg := gpu.SimConfig{GPUs: 2, Seed: 5, NoiseWatts: 0.2}
	cfg := Config{StoragePath: dir}
	h := newHarness(t, simCfg, cfg)
	h.step(time.Second)
	ctx := context.Background()
	if _, err := h.client.StartPhaseSelect(ctx, "gpu0", contract.Idle, phaseapi.Selector{GPUs: []string{h.exp.gpus[0].dev.UUID}}); err != nil {
		t.Fatal(err)
	}
	h.post("all", contract.Idle)
	h.step(5 * time.Second)
	h.exp.saveActive()
	h.exp.Close()

	h.clk.Advance(3 * time.Second)
	h2 := newHarnessOnWith(t, h.clk, simCfg, cfg, func(b gpu.Backend) gpu.Backend { return notOpen{Backend: b, i: 1} })
	if st, ok := h2.exp.RunStatus("gpu0"); !ok || st.State != phaseapi.RunActive || len(st.Gaps) != 1 {
		t.Fatalf("run on the GPU still there after the restart: %+v (found %v), want it active with the restart's gap", st, ok)
	}
	if st, ok := h2.exp.RunStatus("all"); ok {
		t.Errorf("run measuring the GPU that did not open was restored: %+v", st)
	}
	if _, err := h2.client.StartPhase(ctx, "all", contract.Idle); !phaseapi.IsStatus(err, http.StatusConflict) {
		t.Errorf("reusing the unrestored run's id: %v, want 409", err)
	}
	h2.step(time.Second)
	if _, err := h2.client.StartPhase(ctx, "gpu0", contract.Formal); err != nil {
		t.Errorf("the restored run goes on: %v", err)
	}
}
