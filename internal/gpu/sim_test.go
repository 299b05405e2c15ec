package gpu

import (
	"math"
	"testing"
	"time"

	"github.com/joulemark/joulemark/internal/testkit/fakeclock"
)

// simpson integrates PowerAt numerically, independently of ExactEnergy.
func simpson(s *Sim, i int, t0, t1 time.Time, n int) float64 {
	h := t1.Sub(t0) / time.Duration(n)
	sum := s.PowerAt(i, t0) + s.PowerAt(i, t1)
	for k := 1; k < n; k++ {
		w := 2.0
		if k%2 == 1 {
			w = 4
		}
		sum += w * s.PowerAt(i, t0.Add(time.Duration(k)*h))
	}
	return sum * h.Seconds() / 3
}

func TestSimExactEnergyMatchesNumericIntegral(t *testing.T) {
	clk := fakeclock.New()
	s, err := NewSim(SimConfig{GPUs: 2, NoiseWatts: 3, Seed: 42, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	t0 := clk.Now()
	script := []struct {
		after time.Duration
		apply func()
	}{
		{5 * time.Second, func() { s.SetEngineState(EngineLoading) }},
		{20 * time.Second, func() { s.SetEngineState(EngineRunning); s.SetLoad(0.7) }},
		{7 * time.Second, func() { _ = s.SetGPULoad(1, 0.2) }},
		{30 * time.Second, func() { s.SetLoad(0); s.SetEngineState(EngineStopped) }},
		{40 * time.Second, func() {}},
	}
	marks := []time.Time{t0}
	for _, st := range script {
		clk.Advance(st.after)
		st.apply()
		marks = append(marks, clk.Now())
	}
	for i := range 2 {
		for k := 0; k+1 < len(marks); k++ {
			// integrate segment by segment: Simpson is exact enough between kinks
			a, b := marks[k], marks[k+1]
			got := s.ExactEnergy(i, a, b)
			want := simpson(s, i, a, b, 20000)
			if math.Abs(got-want) > 1e-6*want {
				t.Errorf("gpu %d [%d]: exact %.6f J, numeric %.6f J", i, k, got, want)
			}
		}
		whole := s.ExactEnergy(i, marks[0], marks[len(marks)-1])
		sum := 0.0
		for k := 0; k+1 < len(marks); k++ {
			sum += s.ExactEnergy(i, marks[k], marks[k+1])
		}
		if math.Abs(whole-sum) > 1e-9*whole {
			t.Errorf("gpu %d: energy not additive: %.9f vs %.9f", i, whole, sum)
		}
	}
	// the power model: loading ramps toward StartupWatts, release decays to idle
	if p := s.PowerAt(0, marks[2].Add(-time.Millisecond)); math.Abs(p-250) > 15 {
		t.Errorf("power at the end of loading %.1f W, want ≈ 250 W", p)
	}
	if p := s.PowerAt(0, marks[4].Add(-time.Millisecond)); math.Abs(p-(70+0.7*630)) > 15 {
		t.Errorf("power at load 0.7 %.1f W, want ≈ %.0f W", p, 70+0.7*630)
	}
	if p := s.PowerAt(0, marks[5]); math.Abs(p-70) > 10 {
		t.Errorf("power 40 s after stop %.1f W, want back near idle 70 W", p)
	}
}

func TestSimDeterministicAndValidated(t *testing.T) {
	mk := func(seed uint64) []float64 {
		clk := fakeclock.New()
		s, err := NewSim(SimConfig{GPUs: 3, NoiseWatts: 2, Seed: seed, Clock: clk})
		if err != nil {
			t.Fatal(err)
		}
		var out []float64
		for range 50 {
			clk.Advance(100 * time.Millisecond)
			for i := range 3 {
				smp, err := s.Sample(i)
				if err != nil {
					t.Fatal(err)
				}
				out = append(out, smp.PowerWatts)
			}
		}
		return out
	}
	a, b, c := mk(1), mk(1), mk(2)
	for k := range a {
		if a[k] != b[k] {
			t.Fatalf("same seed, sample %d differs: %v vs %v", k, a[k], b[k])
		}
	}
	same := true
	for k := range a {
		same = same && a[k] == c[k]
	}
	if same {
		t.Error("different seeds gave identical power")
	}
	for _, bad := range []SimConfig{
		{GPUs: -1}, {IdleWatts: 100, MaxWatts: 50}, {NoiseWatts: 50}, {StartupWatts: 900}, {RampSeconds: -1},
	} {
		if _, err := NewSim(bad); err == nil {
			t.Errorf("NewSim(%+v) accepted", bad)
		}
	}
	s, _ := NewSim(SimConfig{GPUs: 1})
	if err := s.SetGPULoad(3, 1); err == nil {
		t.Error("SetGPULoad on a missing GPU accepted")
	}
	if _, err := s.Sample(1); err == nil {
		t.Error("Sample on a missing GPU accepted")
	}
}

func TestSimHistoryBounded(t *testing.T) {
	clk := fakeclock.New()
	s, _ := NewSim(SimConfig{GPUs: 1, History: time.Minute, Clock: clk})
	t0 := clk.Now()
	for k := range 2000 {
		clk.Advance(100 * time.Millisecond)
		s.SetLoad(float64(k%10) / 10)
	}
	if n := len(s.gpus[0].segs); n > 700 {
		t.Errorf("%d segments kept for a 1 minute history at 10 changes/s", n)
	}
	if !math.IsNaN(s.ExactEnergy(0, t0, clk.Now())) {
		t.Error("energy over forgotten history is not NaN")
	}
	if e := s.ExactEnergy(0, clk.Now().Add(-30*time.Second), clk.Now()); !(e > 0) {
		t.Errorf("energy over the kept history %v", e)
	}
}

func TestSimEnergyCounter(t *testing.T) {
	clk := fakeclock.New()
	s, _ := NewSim(SimConfig{GPUs: 1, EnergyCounter: true, Clock: clk})
	if s.Devices()[0].EnergySource != EnergyCounter {
		t.Fatal("energy source not counter")
	}
	t0 := clk.Now()
	a, _ := s.Sample(0)
	s.SetLoad(1)
	clk.Advance(10 * time.Second)
	b, _ := s.Sample(0)
	if !b.HasEnergy || math.Abs((b.EnergyJoules-a.EnergyJoules)-s.ExactEnergy(0, t0, clk.Now())) > 0.002 {
		t.Errorf("counter delta %.3f J, exact %.3f J", b.EnergyJoules-a.EnergyJoules, s.ExactEnergy(0, t0, clk.Now()))
	}
}

func TestSimCounterPeriod(t *testing.T) {
	clk := fakeclock.New()
	s, _ := NewSim(SimConfig{GPUs: 1, EnergyCounter: true, CounterPeriod: 100 * time.Millisecond, Clock: clk})
	t0 := clk.Now()
	s.SetLoad(1)
	clk.Advance(1030 * time.Millisecond)
	a, _ := s.Sample(0)
	clk.Advance(50 * time.Millisecond) // still inside the same 100 ms update period
	b, _ := s.Sample(0)
	if a.EnergyJoules != b.EnergyJoules {
		t.Errorf("counter moved within one update period: %v → %v", a.EnergyJoules, b.EnergyJoules)
	}
	want := s.ExactEnergy(0, t0, t0.Add(time.Second))
	if math.Abs(a.EnergyJoules-want) > 0.002 {
		t.Errorf("counter %.3f J, want the energy at the last update %.3f J", a.EnergyJoules, want)
	}
}

// TestSimDetachedGPUIdles: a detached GPU stays at idle power while the
// engine loads and runs on the others.
func TestSimDetachedGPUIdles(t *testing.T) {
	clk := fakeclock.New()
	s, err := NewSim(SimConfig{GPUs: 2, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SetGPUAttached(1, false); err != nil {
		t.Fatal(err)
	}
	s.SetEngineState(EngineRunning)
	s.SetLoad(1)
	clk.Advance(time.Minute)
	p0, p1 := s.PowerAt(0, clk.Now()), s.PowerAt(1, clk.Now())
	if p0 < 600 || p1 > 80 {
		t.Errorf("attached GPU %.1f W, detached %.1f W; want near max and idle", p0, p1)
	}
	if err := s.SetGPUAttached(5, false); err == nil {
		t.Error("no error for GPU 5 of 2")
	}
}

// TestSimDownAtStart: a GPU down at start is listed with Err and no UUID
// and its reads fail until DownFor has passed; then it opens with its
// identity. DownFor 0 keeps it down.
func TestSimDownAtStart(t *testing.T) {
	clk := fakeclock.New()
	s, err := NewSim(SimConfig{GPUs: 3, Clock: clk, DownAtStart: []int{1}, DownFor: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	d := s.Devices()
	if d[1].Err == "" || d[1].UUID != "" || d[0].Err != "" || d[2].UUID == "" {
		t.Fatalf("devices at start: %+v", d)
	}
	if _, err := s.Sample(1); err == nil {
		t.Error("a GPU down at start sampled")
	}
	if _, err := s.SlowSample(1); err == nil {
		t.Error("a GPU down at start answered its slow read")
	}
	if _, err := s.Sample(0); err != nil {
		t.Errorf("GPU 0: %v", err)
	}
	clk.Advance(5 * time.Second)
	if _, err := s.Sample(1); err != nil {
		t.Errorf("GPU 1 after DownFor: %v", err)
	}
	if d := s.Devices()[1]; d.Err != "" || d.UUID == "" || d.PowerScope != ScopeGPU {
		t.Errorf("GPU 1 once open: %+v", d)
	}
	forGood, err := NewSim(SimConfig{GPUs: 2, Clock: clk, DownAtStart: []int{0}})
	if err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Hour)
	if _, err := forGood.Sample(0); err == nil || forGood.Devices()[0].Err == "" {
		t.Errorf("DownFor 0 opened the GPU after an hour: %v", err)
	}
	if _, err := NewSim(SimConfig{GPUs: 2, Clock: clk, DownAtStart: []int{2}}); err == nil {
		t.Error("GPU 2 of 2 down at start accepted")
	}
}

// TestSimPowerBias: with PowerBias the power readings are that factor times
// the power the counter integrates; the counter and ExactEnergy are not
// biased; a bias outside 0.5..1.5 is refused.
func TestSimPowerBias(t *testing.T) {
	clk := fakeclock.New()
	s, err := NewSim(SimConfig{GPUs: 1, Clock: clk, EnergyCounter: true, PowerBias: 1.06})
	if err != nil {
		t.Fatal(err)
	}
	t0 := clk.Now()
	clk.Advance(10 * time.Second)
	smp, err := s.Sample(0)
	if err != nil {
		t.Fatal(err)
	}
	if want := 1.06 * s.PowerAt(0, clk.Now()); math.Abs(smp.PowerWatts-want) > 1e-9 {
		t.Errorf("power %v W, want 1.06 × %v", smp.PowerWatts, s.PowerAt(0, clk.Now()))
	}
	if exact := s.ExactEnergy(0, t0, clk.Now()); math.Abs(smp.EnergyJoules-exact) > 0.002 {
		t.Errorf("counter %v J, want the unbiased %v J", smp.EnergyJoules, exact)
	}
	for _, bad := range []float64{0.4, 1.6, math.NaN()} {
		if _, err := NewSim(SimConfig{PowerBias: bad}); err == nil {
			t.Errorf("power bias %v accepted", bad)
		}
	}
}
