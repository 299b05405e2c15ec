package exporter

import (
	"context"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/joulemark/joulemark/internal/contract"
	"github.com/joulemark/joulemark/internal/gpu"
	"github.com/joulemark/joulemark/internal/phaseapi"
)

// engineView overrides what the slow reads say about the engine: its
// compute processes (PIDs; nil: the list cannot be read) and the memory in
// use, on every GPU.
type engineView struct {
	gpu.Backend
	mu   sync.Mutex
	pids []uint32
	mem  float64
}

// set shows procs processes (PIDs 100, 101, …; -1: the list cannot be
// read) and memGiB in use.
func (v *engineView) set(procs int, memGiB float64) { v.setPIDs(pids(procs, false), memGiB) }

func (v *engineView) setPIDs(pids []uint32, memGiB float64) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.pids, v.mem = pids, memGiB*(1<<30)
}

func (v *engineView) SlowSample(i int) (gpu.SlowSample, error) {
	s, err := v.Backend.SlowSample(i)
	v.mu.Lock()
	defer v.mu.Unlock()
	s.ComputePIDs, s.ComputeProcesses, s.MemoryUsedBytes = v.pids, len(v.pids), v.mem
	if v.pids == nil {
		s.ComputeProcesses = -1
	}
	return s, err
}

// pids are the PIDs of n processes of other tenants (-1: the list cannot
// be read), plus the engine's when engine.
func pids(n int, engine bool) []uint32 {
	if n < 0 {
		return nil
	}
	out := []uint32{}
	for k := range n {
		out = append(out, uint32(100+k))
	}
	if engine {
		out = append(out, gpu.SimEnginePID)
	}
	return out
}

// TestReleasePerMethod: the release closes only once the engine is gone
// (its exit reported, or no compute process), memory is back to the idle
// phase's, and power is back; the status says which criterion was met
// last, and the release ends there.
func TestReleasePerMethod(t *testing.T) {
	for _, tc := range []struct {
		name       string
		exitAt     time.Duration // when the bench reports the exit (0: never)
		procsGone  time.Duration // when NVML stops showing the process
		memBack    time.Duration // when memory is back (0: never)
		closedBy   string
		closedNear time.Duration // when the release should end, after its start (±1.1 s: the 1 Hz reads)
		basis      string        // of the process criterion at close
		strict     bool          // Config.ReleaseRequireEngineExit
		idleProcs  int           // compute processes NVML lists at idle, and again once the engine is gone (-1: unknown)
		tenantGone time.Duration // when the idle phase's other processes leave (0: never)
		blind      bool          // Config.ProcessesBlind: not in the host's PID namespace
		timeoutHas string        // with closedBy "": the timed-out release's reason has this
	}{
		{name: "engine exit reported last", exitAt: 12 * time.Second, procsGone: time.Hour, memBack: 10 * time.Second,
			closedBy: phaseapi.CriterionProcess, closedNear: 12 * time.Second, basis: phaseapi.BasisEngineExit},
		{name: "memory back last, no lifecycle", procsGone: 8 * time.Second, memBack: 10 * time.Second,
			closedBy: phaseapi.CriterionMemory, closedNear: 10 * time.Second, basis: phaseapi.BasisNVML},
		// 570 W above idle decaying with τ = 1 s is within 5% of 70 W after
		// ln(570/3.5) ≈ 5.1 s, plus the averaging window
		{name: "power back last", procsGone: time.Second, memBack: time.Second,
			closedBy: phaseapi.CriterionPower, closedNear: 5500 * time.Millisecond, basis: phaseapi.BasisNVML},
		{name: "memory never back", procsGone: time.Second, timeoutHas: "memory"},
		// strict: NVML's empty list does not count, only the exit report
		{name: "strict, exit reported after NVML shows none", exitAt: 12 * time.Second, procsGone: time.Second, memBack: time.Second,
			strict: true, closedBy: phaseapi.CriterionProcess, closedNear: 12 * time.Second, basis: phaseapi.BasisEngineExit},
		{name: "strict, exit never reported", procsGone: time.Second, memBack: time.Second, strict: true, timeoutHas: "require-engine-exit"},
		// a process NVML listed at idle too (another tenant, a sidecar) does
		// not hold the release
		{name: "foreign process at idle", procsGone: 3 * time.Second, memBack: time.Second, idleProcs: 1,
			closedBy: phaseapi.CriterionPower, closedNear: 5500 * time.Millisecond, basis: phaseapi.BasisNVML},
		// process queries not permitted: met, but said to be unverified
		{name: "process lists unknown", procsGone: 0, memBack: time.Second, idleProcs: -1,
			closedBy: phaseapi.CriterionPower, closedNear: 5500 * time.Millisecond, basis: phaseapi.BasisUnverified},
		// PID sets, not counts: the idle phase's other process leaving at
		// 1 s does not stand for the engine, which leaves at 8 s
		{name: "another process leaves while the engine runs", procsGone: 8 * time.Second, memBack: time.Second, idleProcs: 1,
			tenantGone: time.Second, closedBy: phaseapi.CriterionProcess, closedNear: 8 * time.Second, basis: phaseapi.BasisNVML},
		// outside the host's PID namespace the lists are blind: met
		// unverified, never from them (here they never empty)
		{name: "blind PID namespace", procsGone: time.Hour, memBack: time.Second, blind: true,
			closedBy: phaseapi.CriterionPower, closedNear: 5500 * time.Millisecond, basis: phaseapi.BasisUnverified},
	} {
		t.Run(tc.name, func(t *testing.T) {
			view := &engineView{}
			cfg := Config{ReleaseHold: 5 * time.Second, ReleaseMaxWait: 40 * time.Second, ReleaseRequireEngineExit: tc.strict}
			if tc.blind {
				cfg.ProcessesBlind = "not in the host's PID namespace (test)"
			}
			h := newHarnessWith(t, gpu.SimConfig{GPUs: 2, Seed: 9, DecayTau: 1, RampSeconds: 0.5}, cfg,
				func(b gpu.Backend) gpu.Backend { view.Backend = b; return view })
			view.setPIDs(pids(tc.idleProcs, false), 0.5)
			h.post("r", contract.Idle)
			h.step(6 * time.Second)
			view.setPIDs(pids(tc.idleProcs, true), 70)
			h.post("r", contract.Formal)
			h.sim.SetLoad(0.8)
			h.step(5 * time.Second)
			rel := h.post("r", contract.Release)
			h.sim.SetLoad(0)
			h.sim.SetEngineState(gpu.EngineStopped)
			var st phaseapi.RunStatus
			mem := 70.0
			for k := 0; k < 600; k++ {
				since := h.clk.Now().Sub(rel)
				others := tc.idleProcs
				if tc.tenantGone > 0 && since >= tc.tenantGone {
					others = 0
				}
				if tc.memBack > 0 && since >= tc.memBack {
					mem = 0.5
				}
				view.setPIDs(pids(others, since < tc.procsGone), mem)
				if tc.exitAt > 0 && since == tc.exitAt {
					if _, err := h.client.EngineExited(context.Background(), "r"); err != nil {
						t.Fatal(err)
					}
				}
				h.step(h.exp.cfg.Interval)
				st, _ = h.exp.RunStatus("r")
				if st.Release.State != phaseapi.ReleaseWaiting {
					break
				}
			}
			if tc.closedBy == "" {
				if st.Release.State != phaseapi.ReleaseTimedOut || !strings.Contains(st.Release.Reason, tc.timeoutHas) {
					t.Errorf("release %s (%s), want timed out on %s", st.Release.State, st.Release.Reason, tc.timeoutHas)
				}
				return
			}
			if st.Release.State != phaseapi.ReleaseClosed {
				t.Fatalf("release %s (%s), want closed", st.Release.State, st.Release.Reason)
			}
			if st.Release.ClosedBy != tc.closedBy || st.Release.ClosedByAt == nil {
				t.Errorf("closed by %q at %v, want %q", st.Release.ClosedBy, st.Release.ClosedByAt, tc.closedBy)
			}
			end := Time(*st.Phases[len(st.Phases)-1].End).Sub(rel)
			if math.Abs(float64(end-tc.closedNear)) > float64(1100*time.Millisecond) {
				t.Errorf("release ended %v after its start, want about %v", end, tc.closedNear)
			}
			if got := st.Release.Criteria[0]; got.Name != phaseapi.CriterionProcess || got.Basis != tc.basis {
				t.Errorf("process criterion %+v, want basis %q", got, tc.basis)
			}
			if len(st.Release.Criteria) != 3 {
				t.Errorf("criteria %+v", st.Release.Criteria)
			}
			for _, c := range st.Release.Criteria {
				if !c.Met || c.Since == nil || *c.Since > *st.Release.ClosedByAt {
					t.Errorf("criterion %+v at close (closed by %s at %v)", c, st.Release.ClosedBy, *st.Release.ClosedByAt)
				}
			}
		})
	}
}
