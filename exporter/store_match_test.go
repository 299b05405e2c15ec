package exporter

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/joulemark/joulemark/internal/gpu"
)

// permBackend lists the GPUs of a backend in another order, or some of
// them only (a reboot that enumerates them differently, or loses one):
// GPU j here is the backend's GPU order[j].
type permBackend struct {
	gpu.Backend
	order []int
}

func (p permBackend) Devices() []gpu.Device {
	all := p.Backend.Devices()
	out := make([]gpu.Device, len(p.order))
	for j, i := range p.order {
		out[j] = all[i]
		out[j].Index = j
	}
	return out
}

func (p permBackend) Sample(j int) (gpu.Sample, error) { return p.Backend.Sample(p.order[j]) }
func (p permBackend) SlowSample(j int) (gpu.SlowSample, error) {
	return p.Backend.SlowSample(p.order[j])
}

// TestRestartMatchesGPUsByUUID: after a restart that lists the GPUs in
// another order, or one fewer (8 → 7 after a reboot), the run is
// restored on its GPUs by UUID: each GPU's counter continues from its own
// save and the run's phase energy goes on per UUID; a GPU not found is
// named in a gap of the run, open until its end. Fails with GPUs matched
// by index (nothing restored when the count or the order changed).
func TestRestartMatchesGPUsByUUID(t *testing.T) {
	for _, tc := range []struct {
		name     string
		order    []int // the saved GPUs, in their new order
		vanished []int // saved GPUs not listed any more
	}{
		{"reordered", []int{2, 0, 1}, nil},
		{"one GPU fewer", []int{2, 1}, []int{0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := newFakeClock()
			sim, err := gpu.NewSim(gpu.SimConfig{GPUs: 3, Seed: 3, NoiseWatts: 0.5, Clock: clk})
			if err != nil {
				t.Fatal(err)
			}
			step := func(e *Exporter, d time.Duration) {
				for range int(d / (100 * time.Millisecond)) {
					clk.Advance(100 * time.Millisecond)
					e.SampleOnce()
				}
			}
			dir := t.TempDir()
			e1, err := newExp(Config{Backend: keepOpen{sim}, Clock: clk, StoragePath: dir, APIToken: testToken})
			if err != nil {
				t.Fatal(err)
			}
			doc := saveRunR(t, e1, true, step)
			clk.Advance(5 * time.Second)
			e2, err := newExp(Config{Backend: permBackend{keepOpen{sim}, tc.order}, Clock: clk, StoragePath: dir, APIToken: testToken})
			if err != nil {
				t.Fatal(err)
			}
			defer e2.Close()
			step(e2, time.Second)
			st, ok := e2.RunStatus("r")
			if !ok {
				t.Fatal("the run was not restored")
			}
			idle := st.Phases[0].GPUs
			if len(idle) != len(tc.order) {
				t.Fatalf("idle phase on GPUs %+v, want the %d GPUs left", idle, len(tc.order))
			}
			for j, k := range tc.order {
				uuid := doc.GPUs[k].UUID
				counter, _ := gatheredValue(t, e2, "joulemark_gpu_energy_joules_total", map[string]string{"uuid": uuid})
				if counter < doc.GPUs[k].EnergyJoules+50 {
					t.Errorf("GPU %s counter %.1f J, want its own save's %.1f J and more", uuid, counter, doc.GPUs[k].EnergyJoules)
				}
				want := counter - doc.Runs[0].Phases[0].Start.EnergyJoules[k]
				if g := idle[j]; g.GPU != j || g.UUID != uuid || math.Abs(g.EnergyJoules-want) > 1e-9*want {
					t.Errorf("idle phase GPU %d: %+v, want %s with %.3f J (its energy since the idle start, by UUID)", j, g, uuid, want)
				}
			}
			var named []string
			for _, g := range st.Gaps {
				if len(g.VanishedUUIDs) > 0 {
					named = append(named, g.VanishedUUIDs...)
					if !g.Open || g.Start != float64(doc.SavedAt)/1e9 {
						t.Errorf("vanished GPUs' gap %+v: want it open from the save", g)
					}
				}
			}
			var want []string
			for _, k := range tc.vanished {
				want = append(want, doc.GPUs[k].UUID)
			}
			if !slices.Equal(named, want) {
				t.Errorf("gaps %+v name vanished GPUs %v, want %v", st.Gaps, named, want)
			}
		})
	}
}
