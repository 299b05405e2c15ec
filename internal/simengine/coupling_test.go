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
		c.Power.IdleWatts, c.Power.MaxWatts = 100, 500
	}, sim)
	if st := sim.EngineState(); st != gpu.EngineRunning {
		t.Fatalf("sim state %s after the engine started", st)
	}
	t0 := time.Now()
	streamN(t, srv.URL, 4, map[string]any{"prompt": "a", "max_tokens": 40, "ignore_eos": true, "stream": true})
	t1 := time.Now()
	// 4 × 40 tokens, 4 prompt tokens: the energy above idle is the
	// per-token terms plus the active power over the steps, at most the
	// whole interval (a few ms go to HTTP), at least 60 % of it.
	pw := e.Config().Power
	T := t1.Sub(t0).Seconds()
	perToken := 160*pw.DecodeJoulesPerToken + 4*pw.PrefillJoulesPerToken
	dyn := sim.ExactEnergy(0, t0, t1) - 100*T
	if lo, hi := perToken+0.6*pw.ActiveWatts*T, (perToken+pw.ActiveWatts*T)*1.03; dyn < lo || dyn > hi {
		t.Errorf("GPU 0 drew %.2f J above idle over %.3f s; want %.2f..%.2f (per-token %.2f J + active %g W)", dyn, T, lo, hi, perToken, pw.ActiveWatts)
	}
	if m, _ := sim.SlowSample(0); m.MemoryUsedBytes != e.Config().Memory.WeightsBytes+e.Config().Memory.KVCacheBytes {
		t.Errorf("GPU 0 memory %g while serving, want weights + KV cache %+v", m.MemoryUsedBytes, e.Config().Memory)
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
