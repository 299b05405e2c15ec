package exporter

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/joulemark/joulemark/internal/contract"
	"github.com/joulemark/joulemark/internal/gpu"
	"github.com/joulemark/joulemark/internal/phaseapi"
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
// every active run is restored: a run measuring only the other GPUs with
// the restart's gap alone, a run measuring the missing GPU with a gap of
// that GPU's own, open while it is missing (testRestartMissing follows
// the GPU's return). Before, the empty UUID read as "the GPUs changed" and
// no run came back; then the runs measuring the missing GPU were dropped.
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
	for _, tc := range []struct {
		id      string
		gpuGaps [][]int // the gaps' GPU lists
	}{
		{"gpu0", [][]int{nil}},
		{"all", [][]int{nil, {1}}},
	} {
		st, ok := h2.exp.RunStatus(tc.id)
		var gpus [][]int
		for _, g := range st.Gaps {
			gpus = append(gpus, g.GPUs)
		}
		if !ok || st.State != phaseapi.RunActive || !slices.EqualFunc(gpus, tc.gpuGaps, slices.Equal) {
			t.Errorf("run %s after the restart: %+v (found %v), want it active with gaps of GPUs %v", tc.id, st, ok, tc.gpuGaps)
		}
	}
	if _, err := h2.client.StartPhase(ctx, "new", contract.Idle); err != nil {
		t.Errorf("a new run: %v", err)
	}
	h2.step(time.Second)
	for _, id := range []string{"gpu0", "all"} {
		if _, err := h2.client.StartPhase(ctx, id, contract.Formal); err != nil {
			t.Errorf("the restored run %s goes on: %v", id, err)
		}
	}
}
