package exporter

import (
	"testing"
	"time"

	"github.com/joulemark/joulemark/internal/contract"
	"github.com/joulemark/joulemark/internal/gpu"
)

// sampleTickAllocs is the allocation budget of one sampling tick (8 GPUs,
// a run in progress, no remote write): the loop runs every interval for
// the exporter's life, so it allocates nothing.
const sampleTickAllocs = 0

// TestSampleTickAllocs holds one sampling tick of 8 simulated GPUs, with a
// run in its formal phase, to sampleTickAllocs allocations
// (BenchmarkSampleTick8GPUsSim measures its time).
func TestSampleTickAllocs(t *testing.T) {
	clk := newFakeClock()
	sim, err := gpu.NewSim(gpu.SimConfig{GPUs: 8, NoiseWatts: 1, EnergyCounter: true, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	sim.SetLoad(0.7)
	e, err := newExp(Config{Backend: sim, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	tick := func() {
		clk.Advance(100 * time.Millisecond)
		e.SampleOnce()
	}
	for _, p := range []contract.Phase{contract.Idle, contract.Formal} {
		e.mu.Lock()
		if _, _, err := e.lc.StartPhase("allocs", p, e.off(clk.Now()), nil, nil, nil); err != nil {
			t.Fatal(err)
		}
		e.mu.Unlock()
		for range 20 {
			tick()
		}
	}
	e.SampleSlowOnce()
	if n := testing.AllocsPerRun(200, tick); n > sampleTickAllocs {
		t.Errorf("one sampling tick of 8 GPUs allocates %.1f times; budget %d", n, sampleTickAllocs)
	}
}
