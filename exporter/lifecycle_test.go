package exporter

import (
	"context"
	"math"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/joulemark/joulemark/internal/contract"
	"github.com/joulemark/joulemark/internal/gpu"
	"github.com/joulemark/joulemark/internal/phaseapi"
)

const testToken = "test-token-not-secret"

// harness runs an exporter on a simulator with a shared fake clock; time
// only moves when the test steps it.
type harness struct {
	t      *testing.T
	clk    *fakeClock
	sim    *gpu.Sim
	exp    *Exporter
	client *phaseapi.Client
	slowAt time.Time
}

func newHarness(t *testing.T, simCfg gpu.SimConfig, cfg Config) *harness {
	t.Helper()
	return newHarnessWith(t, simCfg, cfg, nil)
}

// newHarnessWith is newHarness with the simulator's backend wrapped by wrap
// (nil: none).
func newHarnessWith(t *testing.T, simCfg gpu.SimConfig, cfg Config, wrap func(gpu.Backend) gpu.Backend) *harness {
	t.Helper()
	return newHarnessOnWith(t, newFakeClock(), simCfg, cfg, wrap)
}

// newHarnessOn is newHarness on an existing clock (an exporter restarted
// on the same simulated time line).
func newHarnessOn(t *testing.T, clk *fakeClock, simCfg gpu.SimConfig, cfg Config) *harness {
	t.Helper()
	return newHarnessOnWith(t, clk, simCfg, cfg, nil)
}

func newHarnessOnWith(t *testing.T, clk *fakeClock, simCfg gpu.SimConfig, cfg Config, wrap func(gpu.Backend) gpu.Backend) *harness {
	t.Helper()
	simCfg.Clock = clk
	sim, err := gpu.NewSim(simCfg)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Backend, cfg.Clock = sim, clk
	if wrap != nil {
		cfg.Backend = wrap(sim)
	}
	if cfg.APIToken == "" {
		cfg.APIToken = testToken
	}
	exp, err := newExp(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(exp.Handler())
	t.Cleanup(func() {
		srv.Close()
		if err := exp.Close(); err != nil {
			t.Error(err)
		}
	})
	client, err := phaseapi.NewClient(srv.URL, cfg.APIToken, nil)
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, clk: clk, sim: sim, exp: exp, client: client, slowAt: clk.Now()}
	exp.SampleOnce()
	exp.SampleSlowOnce()
	return h
}

// step advances the clock by d in sampling intervals, sampling each time.
func (h *harness) step(d time.Duration) {
	iv := h.exp.cfg.Interval
	for n := int(d / iv); n > 0; n-- {
		h.clk.Advance(iv)
		h.exp.SampleOnce()
		if h.clk.Now().Sub(h.slowAt) >= time.Second {
			h.exp.SampleSlowOnce()
			h.slowAt = h.clk.Now()
		}
	}
}

// post starts phase p of run id now and returns the exact instant.
func (h *harness) post(id string, p contract.Phase) time.Time {
	h.t.Helper()
	at := h.clk.Now()
	if _, err := h.client.StartPhase(context.Background(), id, p); err != nil {
		h.t.Fatalf("start phase %s: %v", p, err)
	}
	return at
}

func unixSec(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }

func TestLifecycleEnergyAndRelease(t *testing.T) {
	for _, tc := range []struct {
		name          string
		counter       bool
		interval      time.Duration
		counterPeriod time.Duration // how often the simulated counter updates
	}{
		{"integrated-100ms", false, 100 * time.Millisecond, 0},
		{"counter-100ms", true, 100 * time.Millisecond, 0},
		{"integrated-10ms", false, 10 * time.Millisecond, 0},
		{"counter-updating-every-100ms", true, 100 * time.Millisecond, 100 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, gpu.SimConfig{GPUs: 4, NoiseWatts: 0.5, Seed: 7, RampSeconds: 1.5, DecayTau: 5, EnergyCounter: tc.counter, CounterPeriod: tc.counterPeriod},
				Config{Interval: tc.interval})
			sim, run := h.sim, "run-1"
			h.step(2 * time.Second)
			h.clk.Advance(37 * time.Millisecond) // boundaries between samples
			var at [5]time.Time
			at[0] = h.post(run, contract.Idle)
			h.step(10 * time.Second)
			h.clk.Advance(13 * time.Millisecond)
			at[1] = h.post(run, contract.Startup)
			sim.SetEngineState(gpu.EngineLoading)
			h.step(20 * time.Second)
			at[2] = h.post(run, contract.Warmup)
			sim.SetLoad(0.5)
			sim.SetEngineState(gpu.EngineRunning)
			h.step(15 * time.Second)
			h.clk.Advance(51 * time.Millisecond)
			at[3] = h.post(run, contract.Formal)
			sim.SetLoad(0.9)
			h.step(60 * time.Second)
			at[4] = h.post(run, contract.Release)
			sim.SetLoad(0)
			sim.SetEngineState(gpu.EngineStopped)

			var st phaseapi.RunStatus
			for range int(5 * time.Minute / h.exp.cfg.Interval) { // 5 simulated minutes at most
				h.step(h.exp.cfg.Interval)
				s, _ := h.exp.RunStatus(run)
				if s.Release.State != phaseapi.ReleaseWaiting {
					st = s
					break
				}
			}
			if st.Release.State != phaseapi.ReleaseClosed || st.Release.Closed == nil || !*st.Release.Closed {
				t.Fatalf("release did not close on the simulated decay: %+v", st.Release)
			}
			if st.State != phaseapi.RunEnded {
				t.Errorf("run state %q after release closed, want ended", st.State)
			}
			// let samples past every boundary arrive so all energies are final
			h.step(time.Second)
			st, _ = h.exp.RunStatus(run)
			if len(st.Phases) != 5 {
				t.Fatalf("%d phases, want 5", len(st.Phases))
			}
			relEnd := Time(*st.Release.HoldStart)
			for k, ps := range st.Phases {
				if ps.Start != unixSec(at[k]) {
					t.Errorf("%s start %.9f, want exactly %.9f", ps.Phase, ps.Start, unixSec(at[k]))
				}
				if ps.End == nil {
					t.Fatalf("%s has no end", ps.Phase)
				}
				end := relEnd
				if k < 4 {
					end = at[k+1]
					if *ps.End != unixSec(end) {
						t.Errorf("%s end %.9f, want exactly %.9f", ps.Phase, *ps.End, unixSec(end))
					}
				} else if *ps.End != *st.Release.HoldStart {
					t.Errorf("release end %.9f, want the hold start %.9f", *ps.End, *st.Release.HoldStart)
				}
				total := 0.0
				for i, ge := range ps.GPUs {
					want := sim.ExactEnergy(i, at[k], end)
					total += want
					tol := 0.001 * want
					if tc.counterPeriod > 0 {
						// a counter that updates every period lags by up to one
						// period at each boundary: the error is bounded by
						// period × (power at the start + power at the end)
						tol = tc.counterPeriod.Seconds()*(sim.PowerAt(i, at[k])+sim.PowerAt(i, end)) + 0.01
					}
					if d := math.Abs(ge.EnergyJoules - want); d > tol {
						t.Errorf("%s gpu %d: %.3f J, exact %.3f J (%.4f%% off, tolerance %.3f J)", ps.Phase, i, ge.EnergyJoules, want, d/want*100, tol)
					}
				}
				if rel := math.Abs(ps.EnergyJoules-total) / total; rel > 0.001 && tc.counterPeriod == 0 {
					t.Errorf("%s total %.3f J, exact %.3f J", ps.Phase, ps.EnergyJoules, total)
				}
			}
			// the release ended at the start of the hold, which lasted 30 s
			if d := h.clk.Now().Sub(relEnd); d < 30*time.Second {
				t.Errorf("release closed %v after the hold began, want ≥ 30s", d)
			}
			if p := sim.PowerAt(0, relEnd); math.Abs(p-st.Idle.Baseline[0].PowerWatts) > 0.05*st.Idle.Baseline[0].PowerWatts*1.5 {
				t.Errorf("power at the release end %.1f W, far from the baseline %.1f W", p, st.Idle.Baseline[0].PowerWatts)
			}
			if st.Idle == nil || !st.Idle.Stable {
				t.Fatalf("idle status %+v, want stable", st.Idle)
			}
			for i, b := range st.Idle.Baseline {
				want := sim.ExactEnergy(i, at[0], at[1]) / at[1].Sub(at[0]).Seconds()
				tol := 0.001 * want
				if tc.counterPeriod > 0 {
					tol = tc.counterPeriod.Seconds() * 2 * want * 1.1 / at[1].Sub(at[0]).Seconds()
				}
				if math.Abs(b.PowerWatts-want) > tol {
					t.Errorf("gpu %d baseline %.3f W, exact mean %.3f W", i, b.PowerWatts, want)
				}
				if b.ComputeProcesses != 0 {
					t.Errorf("gpu %d: %d compute processes in idle, want 0", i, b.ComputeProcesses)
				}
			}
		})
	}
}

// TestSimServesEveryContractMetric: the simulated exporter publishes every
// exporter metric of the design's contract (v1).
func TestSimServesEveryContractMetric(t *testing.T) {
	h := newHarness(t, gpu.SimConfig{GPUs: 8, Seed: 2, NoiseWatts: 0.5}, Config{ReleaseHold: time.Second})
	h.post("c", contract.Idle)
	h.step(2 * time.Second)
	for _, p := range []contract.Phase{contract.Startup, contract.Warmup, contract.Formal, contract.Release} {
		h.post("c", p)
		h.step(3 * time.Second)
	}
	m := fetchMetricsHandler(t, h.exp)
	for _, name := range []string{
		"joulemark_gpu_info", "joulemark_gpu_power_watts", "joulemark_gpu_energy_joules_total",
		"joulemark_gpu_memory_used_bytes", "joulemark_gpu_utilization_ratio", "joulemark_gpu_temperature_celsius",
		"joulemark_gpu_power_limit_watts", "joulemark_gpu_sm_clock_hertz",
		"joulemark_sampler_samples_total", "joulemark_sampler_errors_total", "joulemark_sampler_overruns_total",
		"joulemark_phase_active", "joulemark_phase_start_timestamp_seconds", "joulemark_phase_end_timestamp_seconds",
		"joulemark_phase_energy_joules", "joulemark_run_baseline_power_watts", "joulemark_run_release_closed",
	} {
		if !strings.Contains(m, "\n"+name+"{") && !strings.Contains(m, "\n"+name+" ") {
			t.Errorf("/metrics lacks %s", name)
		}
	}
	if n := strings.Count(m, "\njoulemark_phase_energy_joules{"); n != 5*8 {
		t.Errorf("%d phase energy series, want 5 phases × 8 GPUs", n)
	}
}
