package exporter

import (
	"context"
	"math"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/joulemark/joulemark/internal/contract"
	"github.com/joulemark/joulemark/internal/gpu"
	"github.com/joulemark/joulemark/internal/phaseapi"
)

// TestLostGPUGap: GPU 1 of two is lost 10 s after the start (reads fail
// with "GPU is lost", --sim.lost-gpu) in the formal phase. It gets a gap
// of its own from its last good sample: for good, the formal phase counts
// its energy up to that sample exactly, its missing_seconds is the rest of
// the phase, and the run still closes its release on GPU 0 and freezes;
// back 2 s later in the formal phase, its own counter bridges the gap (the
// phase's energy is exact); back in the release phase, begun in the gap,
// that phase counts it from its return. GPU 0 is exact throughout.
func TestLostGPUGap(t *testing.T) {
	for _, tc := range []struct {
		name     string
		lostFor  time.Duration
		relInGap bool // the release starts while GPU 1 is lost
	}{
		{name: "for good"},
		{name: "back in the formal phase", lostFor: 2 * time.Second},
		{name: "back in the release phase", lostFor: 4 * time.Second, relInGap: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, gpu.SimConfig{GPUs: 2, EnergyCounter: true, Seed: 5, LostGPUs: []int{1}, LostAfter: 10 * time.Second, LostFor: tc.lostFor},
				Config{ReleaseHold: 2 * time.Second, ReleaseMaxWait: time.Minute})
			h.post("r", contract.Idle)
			h.step(3 * time.Second)
			formal := h.post("r", contract.Formal)
			h.sim.SetLoad(0.8)
			lastGood := h.clk.Now().Add(7*time.Second - h.exp.cfg.Interval)
			var rel time.Time
			if tc.relInGap {
				h.step(9 * time.Second)
				h.sim.SetLoad(0)
				rel = h.post("r", contract.Release)
			} else {
				h.step(12 * time.Second)
				h.sim.SetLoad(0)
				rel = h.post("r", contract.Release)
			}
			st := stepUntilEnded(h, "r")
			if st.Release.State != phaseapi.ReleaseClosed {
				t.Fatalf("release %s (%s): want closed on GPU 0", st.Release.State, st.Release.Reason)
			}
			checkLostGap(t, h, st, tc.lostFor, lastGood)
			fe := phaseGPUs(t, st, contract.Formal)
			if want := h.sim.ExactEnergy(0, formal, rel); math.Abs(fe[0].EnergyJoules-want) > 0.01 {
				t.Errorf("GPU 0 formal energy %.3f J, exact %.3f J", fe[0].EnergyJoules, want)
			}
			formalEnd := phaseEnd(st, 1)
			wantFormal := h.sim.ExactEnergy(1, formal, lastGood)
			wantMissing := formalEnd.Sub(lastGood).Seconds()
			if tc.lostFor > 0 && !tc.relInGap {
				wantFormal, wantMissing = h.sim.ExactEnergy(1, formal, rel), tc.lostFor.Seconds()+h.exp.cfg.Interval.Seconds()
			}
			if math.Abs(fe[1].EnergyJoules-wantFormal) > 0.01 || math.Abs(fe[1].MissingSeconds-wantMissing) > 1e-6 {
				t.Errorf("GPU 1 formal energy %.3f J missing %.3f s, want %.3f J and %.3f s", fe[1].EnergyJoules, fe[1].MissingSeconds, wantFormal, wantMissing)
			}
			if tc.relInGap {
				back := lastGood.Add(tc.lostFor + h.exp.cfg.Interval)
				re := phaseGPUs(t, st, contract.Release)
				relEnd := phaseEnd(st, 2)
				if want := h.sim.ExactEnergy(1, back, relEnd); math.Abs(re[1].EnergyJoules-want) > 0.01 {
					t.Errorf("GPU 1 release energy %.3f J, want %.3f J from its return", re[1].EnergyJoules, want)
				}
			}
			h.exp.freezeRuns()
			h.exp.mu.RLock()
			frozen := h.exp.lc.runs["r"].frozen != nil
			h.exp.mu.RUnlock()
			if !frozen {
				t.Error("the ended run did not freeze: a boundary still waits for the lost GPU")
			}
		})
	}
}

// checkLostGap checks run st's gap for GPU 1, lost after lastGood for
// lostFor (0: for good).
func checkLostGap(t *testing.T, h *harness, st phaseapi.RunStatus, lostFor time.Duration, lastGood time.Time) {
	t.Helper()
	if len(st.Gaps) != 1 {
		t.Fatalf("gaps %+v: want GPU 1's own", st.Gaps)
	}
	g := st.Gaps[0]
	if g.Reason != contract.GapGPUFailed || !slices.Equal(g.GPUs, []int{1}) || g.Open || math.Abs(g.Start-unixSec(lastGood)) > 1e-6 {
		t.Errorf("gap %+v: want gpu_failed on GPU 1 from its last good sample %v", g, unixSec(lastGood))
	}
	back := unixSec(lastGood.Add(lostFor + h.exp.cfg.Interval))
	switch {
	case lostFor == 0 && math.Abs(g.End-*st.Phases[len(st.Phases)-1].End) > 1e-6:
		t.Errorf("gap ends at %v, want the run's end %v", g.End, *st.Phases[len(st.Phases)-1].End)
	case lostFor > 0 && math.Abs(g.End-back) > 1e-6:
		t.Errorf("gap ends at %v, want GPU 1's return %v", g.End, back)
	}
}

// phaseEnd is the end of st's phase k.
func phaseEnd(st phaseapi.RunStatus, k int) time.Time { return Time(*st.Phases[k].End) }

// phaseGPUs is phase p's per-GPU energies in st.
func phaseGPUs(t *testing.T, st phaseapi.RunStatus, p contract.Phase) []phaseapi.GPUEnergy {
	t.Helper()
	for _, ph := range st.Phases {
		if ph.Phase == p && len(ph.GPUs) == 2 {
			return ph.GPUs
		}
	}
	t.Fatalf("no phase %s with two GPUs in %+v", p, st.Phases)
	return nil
}

// stepUntilEnded steps h until run id ends (a minute at most).
func stepUntilEnded(h *harness, id string) phaseapi.RunStatus {
	h.t.Helper()
	for range 600 {
		h.step(h.exp.cfg.Interval)
		if st, _ := h.exp.RunStatus(id); st.State == phaseapi.RunEnded {
			return st
		}
	}
	st, _ := h.exp.RunStatus(id)
	h.t.Fatalf("run %s still %s after a minute: %s", id, st.State, st.Release.Reason)
	return st
}

// TestHungGPUGap: GPU 1's reads hang (--sim.hang-gpu) in the formal phase
// of a sampling exporter: within stallIntervals it gets a gap of its own
// (gpu_hung) from its last good sample, the run's end through the API is
// resolved on it there, and the run freezes.
func TestHungGPUGap(t *testing.T) { forEachPacer(t, testHungGPUGap) }

func testHungGPUGap(t *testing.T) {
	sim, err := gpu.NewSim(gpu.SimConfig{GPUs: 2, EnergyCounter: true})
	if err != nil {
		t.Fatal(err)
	}
	e, err := newExp(Config{Backend: sim, Interval: 10 * time.Millisecond, APIToken: testToken})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(e.Handler())
	defer srv.Close()
	e.Start(t.Context())
	defer func() {
		if err := e.Close(); err != nil {
			t.Error(err)
		}
	}()
	c, err := phaseapi.NewClient(srv.URL, testToken, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	must := func(_ *phaseapi.RunStatus, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(c.StartPhase(ctx, "h", contract.Idle))
	samples := func(i int) uint64 {
		e.mu.RLock()
		defer e.mu.RUnlock()
		return e.gpus[i].samples
	}
	waitFor(t, "samples in idle", func() bool { return samples(1) > 5 })
	must(c.StartPhase(ctx, "h", contract.Formal))
	sim.HangGPU(1)
	waitFor(t, "GPU 1's gap", func() bool {
		st, _ := e.RunStatus("h")
		return len(st.Gaps) == 1
	})
	must(c.EndRun(ctx, "h"))
	frozen := func() bool {
		e.mu.RLock()
		defer e.mu.RUnlock()
		return e.lc.runs["h"].frozen != nil
	}
	waitFor(t, "the ended run to freeze (its end resolved on every GPU)", frozen)
	st, _ := e.RunStatus("h")
	g := st.Gaps[0]
	if g.Reason != contract.GapGPUHung || !slices.Equal(g.GPUs, []int{1}) || g.End != *st.Phases[1].End {
		t.Errorf("gap %+v: want gpu_hung on GPU 1 until the run's end %v", g, *st.Phases[1].End)
	}
	if m := st.Phases[1].GPUs[1].MissingSeconds; m <= 0 {
		t.Errorf("GPU 1 formal missing_seconds %v, want > 0", m)
	}
}

// TestCounterJumpRejected: one energy counter read 1e12 mJ too high
// (--sim.counter-jump-after) is rejected as above what the GPU's power
// limit allows: that interval and the next are integrated from power, the
// energy stays within 1 J of the exact integral, no reset is counted, and
// joulemark_gpu_energy_rejected_total counts it.
func TestCounterJumpRejected(t *testing.T) {
	h := newHarness(t, gpu.SimConfig{GPUs: 1, EnergyCounter: true, Seed: 2, CounterJumpAfter: 5 * time.Second}, Config{})
	t0, e0 := h.clk.Now(), h.exp.gpus[0].energy
	h.sim.SetLoad(0.6)
	h.step(10 * time.Second)
	g := h.exp.gpus[0]
	if d := g.energy - e0 - h.sim.ExactEnergy(0, t0, h.clk.Now()); math.Abs(d) > 1 || g.rejected != 1 || g.resets != 0 {
		t.Errorf("energy %.3f J off the exact integral, %d rejected, %d resets; want within 1 J, 1 rejected, no reset", d, g.rejected, g.resets)
	}
	want := `joulemark_gpu_energy_rejected_total{gpu="0",uuid="` + g.dev.UUID + `"} 1`
	if body := fetchMetricsHandler(t, h.exp); !strings.Contains(body, want) {
		t.Errorf("/metrics lacks %s", want)
	}
}

// TestDurableWriteOutsideSamplingLock: a phase change whose durable write
// takes 400 ms (a busy node disk) does not hold the lock the samplers
// take: GPU 0 keeps sampling during the write.
func TestDurableWriteOutsideSamplingLock(t *testing.T) {
	sim, err := gpu.NewSim(gpu.SimConfig{GPUs: 1})
	if err != nil {
		t.Fatal(err)
	}
	e, err := newExp(Config{Backend: sim, Interval: 10 * time.Millisecond, APIToken: testToken, StoragePath: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(e.Handler())
	defer srv.Close()
	samples := func() uint64 {
		e.mu.RLock()
		defer e.mu.RUnlock()
		return e.gpus[0].samples
	}
	var during []uint64 // GPU 0's samples at the slow write's start and end
	locked := false     // the write held the samplers' lock
	write := e.store.writeFile
	e.store.writeFile = func(path string, data []byte) error {
		if !strings.HasSuffix(path, activeRunsFile) || during != nil {
			return write(path, data)
		}
		if locked = !tryRLock(&e.mu); locked {
			time.Sleep(400 * time.Millisecond)
			return write(path, data)
		}
		e.mu.RUnlock()
		during = append(during, samples())
		time.Sleep(400 * time.Millisecond)
		during = append(during, samples())
		return write(path, data)
	}
	e.Start(t.Context())
	defer e.Close()
	c, err := phaseapi.NewClient(srv.URL, testToken, nil)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "samples", func() bool { return samples() > 3 })
	if _, err := c.StartPhase(context.Background(), "w", contract.Idle); err != nil {
		t.Fatal(err)
	}
	if locked || len(during) != 2 || during[1] < during[0]+3 {
		t.Errorf("a 400 ms durable write held the samplers' lock: %v; GPU 0's samples at its start and end: %v, want it sampling meanwhile", locked, during)
	}
}

// TestLateTicksCounted: a sampler that waits 300 ms on the exporter's
// lock (anything holding it) misses ticks, and
// joulemark_sampler_overruns_total counts them, though the backend call
// itself was quick.
func TestLateTicksCounted(t *testing.T) { forEachPacer(t, testLateTicksCounted) }

func testLateTicksCounted(t *testing.T) {
	sim, err := gpu.NewSim(gpu.SimConfig{GPUs: 1})
	if err != nil {
		t.Fatal(err)
	}
	e, err := newExp(Config{Backend: sim, Interval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	e.Start(t.Context())
	defer e.Close()
	samples := func() uint64 {
		e.mu.RLock()
		defer e.mu.RUnlock()
		return e.gpus[0].samples
	}
	waitFor(t, "samples", func() bool { return samples() > 3 })
	e.mu.Lock()
	before := e.overruns
	time.Sleep(300 * time.Millisecond)
	e.mu.Unlock()
	n := samples()
	waitFor(t, "a sample after the wait", func() bool { return samples() > n+1 })
	e.mu.RLock()
	missed := e.overruns - before
	e.mu.RUnlock()
	if missed < 5 {
		t.Errorf("%d overruns counted over a 300 ms wait at a 10 ms interval; want the dropped ticks (about 30)", missed)
	}
}

// tryRLock takes mu for reading within 100 ms (a sampler holds it for
// microseconds at a time); false when it could not.
func tryRLock(mu *sync.RWMutex) bool {
	for range 100 {
		if mu.TryRLock() {
			return true
		}
		time.Sleep(time.Millisecond)
	}
	return false
}
