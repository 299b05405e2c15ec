package exporter

import (
	"math"
	"testing"
	"time"

	"github.com/joulemark/joulemark/internal/contract"
	"github.com/joulemark/joulemark/internal/gpu"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestClockStepReanchors: the node's wall clock steps +30 s mid-run (NTP's
// first sync). Sample, phase and last_sample timestamps follow the new
// wall time, the step is counted once, and the energy equals that of the
// same run without a step (integration stays on monotonic time).
func TestClockStepReanchors(t *testing.T) {
	const step = 30 * time.Second
	simCfg := gpu.SimConfig{GPUs: 2, NoiseWatts: 0.5, Seed: 3, EnergyCounter: true}
	stepped := newHarness(t, simCfg, Config{})
	steady := newHarness(t, simCfg, Config{})
	for _, h := range []*harness{stepped, steady} {
		h.post("r", contract.Idle)
		h.step(3 * time.Second)
	}
	stepped.clk.Step(step)
	formalAt := make([]time.Time, 2)
	for i, h := range []*harness{stepped, steady} {
		h.step(2 * time.Second)
		formalAt[i] = h.post("r", contract.Formal)
		h.step(3 * time.Second)
	}
	wallNow := stepped.clk.WallAt(stepped.clk.Now())
	if got := testutil.ToFloat64(stepped.exp.clockSteps); got != 1 {
		t.Errorf("%s = %v, want 1", contract.ExporterClockSteps, got)
	}
	if got := testutil.ToFloat64(steady.exp.clockSteps); got != 0 {
		t.Errorf("%s = %v without a step, want 0", contract.ExporterClockSteps, got)
	}
	last, ok := gatheredValue(t, stepped.exp, contract.GPULastSample, map[string]string{"gpu": "0"})
	if !ok || math.Abs(last-unixSec(wallNow)) > 1e-3 {
		t.Errorf("last sample at %v, want the stepped wall time %v", last, unixSec(wallNow))
	}
	st, ok := stepped.exp.RunStatus("r")
	if !ok {
		t.Fatal("run r not found")
	}
	formal := st.Phases[len(st.Phases)-1]
	if want := unixSec(stepped.clk.WallAt(formalAt[0])); math.Abs(formal.Start-want) > 1e-3 {
		t.Errorf("formal started at %v, want the stepped wall time %v", formal.Start, want)
	}
	for _, g := range []string{"0", "1"} {
		a, _ := gatheredGPUEnergy(t, stepped.exp, g)
		b, _ := gatheredGPUEnergy(t, steady.exp, g)
		if a <= 0 || math.Abs(a-b) > 1e-9*b {
			t.Errorf("GPU %s energy %v J with the step, %v J without", g, a, b)
		}
	}
}
