package simengine

import (
	"context"
	"testing"
	"time"

	"github.com/joulemark/joulemark/internal/gpu"
)

// TestDrivesSimulatedGPUs couples the engine to real simulated GPUs: power
// rises with the batch and the engine state reaches the GPUs.
func TestDrivesSimulatedGPUs(t *testing.T) {
	sim, err := gpu.NewSim(gpu.SimConfig{GPUs: 2, IdleWatts: 100, MaxWatts: 500, StartupWatts: 200, RampSeconds: 0.01, DecayTau: 0.01})
	if err != nil {
		t.Fatal(err)
	}
	sim.SetEngineState(gpu.EngineStopped)
	e, srv := startEngine(t, func(c *Config) {
		c.MaxBatch = 4
		c.DecodeBase = 5 * time.Millisecond
	}, sim)
	if st := sim.EngineState(); st != gpu.EngineRunning {
		t.Fatalf("sim state %s after the engine started", st)
	}
	t0 := time.Now()
	streamN(t, srv.URL, 4, map[string]any{"prompt": "a", "max_tokens": 40, "ignore_eos": true, "stream": true})
	t1 := time.Now()
	// Four sequences in a batch of four: load 1, 500 W per GPU for most of
	// the interval (40 steps of 5.4 ms).
	avg := sim.ExactEnergy(0, t0, t1) / t1.Sub(t0).Seconds()
	if avg < 350 {
		t.Errorf("GPU 0 averaged %.0f W while the batch was full; want close to 500 W", avg)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := e.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if st := sim.EngineState(); st != gpu.EngineStopped {
		t.Errorf("sim state %s after the engine stopped", st)
	}
	time.Sleep(50 * time.Millisecond)
	if p := sim.PowerAt(1, time.Now()); p > 110 {
		t.Errorf("GPU 1 at %.0f W after stop; want back near idle 100 W", p)
	}
}
