package exporter

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/joulemark/joulemark/internal/contract"
	"github.com/joulemark/joulemark/internal/gpu"
	"github.com/joulemark/joulemark/internal/phaseapi"
)

// runToRelease drives run id through idle (6 s) and formal (3 s) at steady
// idle power, starts its release, and steps until the release is decided or
// maxSteps intervals passed; during(h, k) is called before step k of the
// release.
func runToRelease(h *harness, id string, during func(h *harness, k int)) phaseapi.RunStatus {
	h.post(id, contract.Idle)
	h.step(6 * time.Second)
	h.post(id, contract.Formal)
	h.step(3 * time.Second)
	h.post(id, contract.Release)
	limit := int(h.exp.cfg.ReleaseMaxWait/h.exp.cfg.Interval) + 10
	for k := range limit {
		if during != nil {
			during(h, k)
		}
		h.step(h.exp.cfg.Interval)
		st, _ := h.exp.RunStatus(id)
		if st.Release.State != phaseapi.ReleaseWaiting {
			return st
		}
	}
	st, _ := h.exp.RunStatus(id)
	return st
}

// TestReleaseClosesAtSteadyIdleAcrossCounterPeriods: at a perfectly steady
// idle, release closes whatever the energy counter's update period (90–110
// ms, against a 100 ms sampler), phase and jitter. Judged from the
// counter's staircase over a 1 s window, periods like 95 ms time out.
func TestReleaseClosesAtSteadyIdleAcrossCounterPeriods(t *testing.T) {
	for periodMs := 90; periodMs <= 110; periodMs++ {
		for _, jitter := range []time.Duration{0, 4 * time.Millisecond} {
			for _, offset := range []time.Duration{0, 37 * time.Millisecond} {
				name := fmt.Sprintf("period=%dms/jitter=%v/offset=%v", periodMs, jitter, offset)
				t.Run(name, func(t *testing.T) {
					h := newHarness(t, gpu.SimConfig{GPUs: 2, NoiseWatts: 0, Seed: uint64(periodMs), EnergyCounter: true,
						CounterPeriod: time.Duration(periodMs) * time.Millisecond, CounterJitter: jitter, CounterOffset: offset},
						Config{ReleaseHold: 10 * time.Second, ReleaseMaxWait: 40 * time.Second})
					st := runToRelease(h, "r", nil)
					if st.Release.State != phaseapi.ReleaseClosed {
						t.Fatalf("release %s (%s), want closed at a steady idle", st.Release.State, st.Release.Reason)
					}
					// nothing moved: the hold began where the release did
					rel := st.Phases[len(st.Phases)-1]
					if st.Release.HoldStart == nil || *st.Release.HoldStart-rel.Start > 0.11 {
						t.Errorf("hold began at %v, release at %v: the hold was reset at a steady idle", st.Release.HoldStart, rel.Start)
					}
				})
			}
		}
	}
}

// TestReleaseExcursionResetsHold: a real 6% excursion of one GPU for 2 s
// restarts the hold (the release ends after it); a 3% one does not.
func TestReleaseExcursionResetsHold(t *testing.T) {
	for _, tc := range []struct {
		rise  float64
		reset bool
	}{{0.06, true}, {0.03, false}} {
		t.Run(fmt.Sprintf("rise=%g", tc.rise), func(t *testing.T) {
			bump := &bumped{gpu: 1}
			h := newHarnessWith(t, gpu.SimConfig{GPUs: 2, NoiseWatts: 0.2, Seed: 3, EnergyCounter: true,
				CounterPeriod: 97 * time.Millisecond, CounterJitter: 3 * time.Millisecond},
				Config{ReleaseHold: 10 * time.Second, ReleaseMaxWait: 60 * time.Second}, func(b gpu.Backend) gpu.Backend { bump.Backend = b; return bump })
			var excursionEnd time.Time
			st := runToRelease(h, "r", func(h *harness, k int) {
				switch k {
				case 50: // 5 s into the hold
					bump.set(1 + tc.rise)
				case 70:
					bump.set(1)
					excursionEnd = h.clk.Now()
				}
			})
			if st.Release.State != phaseapi.ReleaseClosed {
				t.Fatalf("release %s (%s), want closed", st.Release.State, st.Release.Reason)
			}
			rel := st.Phases[len(st.Phases)-1]
			holdStart := *st.Release.HoldStart
			if tc.reset && holdStart < unixSec(excursionEnd) {
				t.Errorf("hold began at %.2f, before the %g%% excursion ended at %.2f: the excursion did not reset it", holdStart, tc.rise*100, unixSec(excursionEnd))
			}
			if !tc.reset && holdStart-rel.Start > 0.11 {
				t.Errorf("hold began %.2f s into the release: a %g%% rise, inside the ±5%% band, reset it", holdStart-rel.Start, tc.rise*100)
			}
		})
	}
}

// bumped scales one GPU's power (not its memory or processes): a pure
// power excursion.
type bumped struct {
	gpu.Backend
	gpu    int
	mu     sync.Mutex
	factor float64
}

func (b *bumped) set(f float64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.factor = f
}

func (b *bumped) Sample(i int) (gpu.Sample, error) {
	s, err := b.Backend.Sample(i)
	b.mu.Lock()
	defer b.mu.Unlock()
	if i == b.gpu && b.factor > 0 {
		s.PowerWatts *= b.factor
	}
	return s, err
}

// flakyCounter wraps a backend: every dropEvery-th read comes back without
// the energy counter (NVML answered the power but not the counter) and
// every failEvery-th read fails outright; the reads around a failure keep
// their counter (they bridge the failure's gap: an interval across a gap is
// never integrated, gpufail.go).
type flakyCounter struct {
	gpu.Backend
	mu                   sync.Mutex
	reads                map[int]int
	dropEvery, failEvery int
	dropped, failed      map[int]int
}

func (f *flakyCounter) Sample(i int) (gpu.Sample, error) {
	s, err := f.Backend.Sample(i)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reads[i]++
	n := f.reads[i]
	switch {
	case n%f.failEvery == 0:
		f.failed[i]++
		return gpu.Sample{}, fmt.Errorf("injected read failure %d", n)
	case n%f.dropEvery == 0 && (n-1)%f.failEvery != 0 && (n+1)%f.failEvery != 0:
		f.dropped[i]++
		s.HasEnergy, s.EnergyJoules = false, 0
	}
	return s, err
}

// TestFailedCounterReadsCountOnce: reads that lose the counter (or fail
// outright) fall back to integration for that interval only; the energy
// matches the exact integral of the simulated power, with no interval
// counted twice, and every lost counter read is counted.
func TestFailedCounterReadsCountOnce(t *testing.T) {
	clk := newFakeClock()
	sim, err := gpu.NewSim(gpu.SimConfig{GPUs: 2, NoiseWatts: 1, Seed: 11, EnergyCounter: true, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	f := &flakyCounter{Backend: sim, reads: map[int]int{}, dropEvery: 7, failEvery: 11, dropped: map[int]int{}, failed: map[int]int{}}
	e, err := newExp(Config{Backend: f, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	e.SampleOnce()
	t0 := clk.Now()
	step := func(d time.Duration) {
		for n := int(d / e.cfg.Interval); n > 0; n-- {
			clk.Advance(e.cfg.Interval)
			e.SampleOnce()
		}
	}
	sim.SetLoad(0.8)
	step(20 * time.Second)
	sim.SetLoad(0.2)
	step(20 * time.Second)
	t1 := clk.Now()
	for i, g := range e.gpus {
		exact := sim.ExactEnergy(i, t0, t1)
		// the trapezoid over the integrated intervals errs by far less than
		// a millijoule per interval here; one interval counted twice adds
		// ~20–60 J
		if math.Abs(g.energy-exact) > 0.5 {
			t.Errorf("gpu %d: energy %.3f J, exact integral %.3f J (difference %.3f J)", i, g.energy, exact, g.energy-exact)
		}
		if got, want := g.errors[errCounter], uint64(f.dropped[i]); got != want || want == 0 {
			t.Errorf("gpu %d: %d counter errors counted, %d injected", i, got, want)
		}
		if got, want := g.errors[errRead], uint64(f.failed[i]); got != want || want == 0 {
			t.Errorf("gpu %d: %d read errors counted, %d injected", i, got, want)
		}
	}
	want := fmt.Sprintf(`joulemark_sampler_errors_total{gpu="0",reason="counter",uuid=%q} %d`, e.gpus[0].dev.UUID, f.dropped[0])
	if body := fetchMetricsHandler(t, e); !strings.Contains(body, want) {
		t.Errorf("/metrics lacks %s", want)
	}
}

// TestHungGPUStallsOnlyItself: a GPU whose driver call hangs stops only its
// own sampling; it shows joulemark_gpu_up 0 and /healthz fails, while the
// other GPUs keep sampling.
func TestHungGPUStallsOnlyItself(t *testing.T) { forEachPacer(t, testHungGPUStallsOnlyItself) }

func testHungGPUStallsOnlyItself(t *testing.T) {
	sim, err := gpu.NewSim(gpu.SimConfig{GPUs: 3})
	if err != nil {
		t.Fatal(err)
	}
	e, err := newExp(Config{Backend: sim, Interval: 10 * time.Millisecond})
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
	samples := func(i int) uint64 {
		e.mu.RLock()
		defer e.mu.RUnlock()
		return e.gpus[i].samples
	}
	healthz := func() int {
		resp, err := http.Get(srv.URL + "/healthz")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	waitFor(t, "every GPU sampling", func() bool { return samples(0) > 3 && samples(1) > 3 && samples(2) > 3 })
	if c := healthz(); c != http.StatusOK {
		t.Fatalf("/healthz %d before the hang", c)
	}
	sim.HangGPU(1)
	waitFor(t, "/healthz to fail", func() bool { return healthz() == http.StatusServiceUnavailable })
	hung, before := samples(1), samples(0)
	waitFor(t, "GPU 0 and 2 to keep sampling", func() bool { return samples(0) > before+10 && samples(2) > before+10 })
	if samples(1) != hung {
		t.Errorf("GPU 1 sampled while hung")
	}
	body := fetchMetricsHandler(t, e)
	for i, want := range []int{1, 0, 1} {
		line := fmt.Sprintf("joulemark_gpu_up{gpu=\"%d\",uuid=%q} %d\n", i, e.gpus[i].dev.UUID, want)
		if !strings.Contains(body, line) {
			t.Errorf("/metrics lacks %s", strings.TrimSpace(line))
		}
	}
}

// waitFor polls cond every 10 ms for at most 20 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for range 2000 {
		if cond() {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s", what)
}

// failWindow fails every read of GPU 0 while on, and can shift its counter
// back (a reset) from some instant on.
type failWindow struct {
	gpu.Backend
	mu    sync.Mutex
	on    bool
	shift float64 // joules taken off GPU 0's counter
}

func (f *failWindow) Sample(i int) (gpu.Sample, error) {
	f.mu.Lock()
	on, shift := f.on, f.shift
	f.mu.Unlock()
	if i == 0 && on {
		return gpu.Sample{}, errors.New("injected read failure")
	}
	s, err := f.Backend.Sample(i)
	if i == 0 {
		s.EnergyJoules -= shift
	}
	return s, err
}

// TestFailedReadsBridgedByCounter: GPU 0's reads fail for 2 s while it
// jumps from idle to full load and back; the neighbouring samples are both
// at idle, so the trapezoid would draw a line at idle across the burst. The
// counter's delta at the next good read covers it: the energy matches the
// exact integral. A counter that went back across the gap (a reset) falls
// back to the trapezoid and counts a reset.
func TestFailedReadsBridgedByCounter(t *testing.T) {
	clk := newFakeClock()
	sim, err := gpu.NewSim(gpu.SimConfig{GPUs: 1, Seed: 3, EnergyCounter: true, RampSeconds: 0.1, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	f := &failWindow{Backend: sim}
	e, err := newExp(Config{Backend: f, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	step := func(d time.Duration) {
		for n := int(d / e.cfg.Interval); n > 0; n-- {
			clk.Advance(e.cfg.Interval)
			e.SampleOnce()
		}
	}
	burst := func(shift float64) float64 { // the measured minus the exact energy over a burst in failed reads
		t0, e0 := clk.Now(), e.gpus[0].energy
		step(time.Second)
		f.mu.Lock()
		f.on, f.shift = true, shift
		f.mu.Unlock()
		sim.SetLoad(1)
		step(time.Second)
		sim.SetLoad(0)
		step(time.Second)
		f.mu.Lock()
		f.on = false
		f.mu.Unlock()
		step(time.Second)
		return (e.gpus[0].energy - e0) - sim.ExactEnergy(0, t0, clk.Now())
	}
	e.SampleOnce()
	step(2 * time.Second)
	if d := burst(0); math.Abs(d) > 0.01 {
		t.Errorf("energy across failed reads off the exact integral by %.3f J; want the counter's delta (±0.01 J)", d)
	}
	if d := burst(1e6); d > -100 || e.gpus[0].resets != 1 {
		t.Errorf("across a counter reset: %.1f J off, %d resets; want the trapezoid (hundreds of J short) and one reset", d, e.gpus[0].resets)
	}
}
