package exporter

import (
	"math"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/joulemark/joulemark/internal/contract"
	"github.com/joulemark/joulemark/internal/gpu"
	"github.com/joulemark/joulemark/internal/phaseapi"
)

// restartRig is GPU hardware that outlives the exporter: open gives a
// backend over it (the exporter closes each), tick runs it for d (the
// clock is advanced by the caller), reset reloads its driver (the raw
// counter starts again below the saved value).
type restartRig struct {
	open  func(t *testing.T) gpu.Backend
	tick  func(d time.Duration)
	reset func()
}

// firstRaw records GPU 0's raw counter at its first sample with one.
type firstRaw struct {
	gpu.Backend
	mu  sync.Mutex
	raw *float64
}

func (f *firstRaw) Sample(i int) (gpu.Sample, error) {
	s, err := f.Backend.Sample(i)
	f.mu.Lock()
	defer f.mu.Unlock()
	if i == 0 && err == nil && s.HasEnergy && f.raw == nil {
		v := s.EnergyJoules
		f.raw = &v
	}
	return s, err
}

// testRestartBridge: across an exporter restart the GPU's energy counter
// continues by the raw driver counter's advance when it did not reset:
// exactly the saved energy plus the raw difference, the downtime's energy
// included, after a graceful shutdown and after a crash. A raw counter that
// went back, or a state file without the raw value (version 1), is not
// bridged: the counter continues from the clean save (nothing counted over
// the downtime) or, after a crash, starts again from 0, as without a
// counter. The restored run gets its exporter_restarted gap either way.
func testRestartBridge(t *testing.T, rig func(clk *fakeClock) restartRig) {
	for _, tc := range []struct {
		name         string
		clean        bool
		reset, noRaw bool
	}{
		{"graceful, raw counter intact", true, false, false},
		{"crash, raw counter intact", false, false, false},
		{"graceful, raw counter reset", true, true, false},
		{"crash, raw counter reset", false, true, false},
		{"graceful, state without raw value", true, false, true},
		{"crash, state without raw value", false, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := newFakeClock()
			r := rig(clk)
			dir := t.TempDir()
			e1, err := newExp(Config{Backend: r.open(t), Clock: clk, StoragePath: dir, APIToken: testToken})
			if err != nil {
				t.Fatal(err)
			}
			step := func(e *Exporter, d time.Duration) {
				for range int(d / (100 * time.Millisecond)) {
					clk.Advance(100 * time.Millisecond)
					r.tick(100 * time.Millisecond)
					e.SampleOnce()
				}
			}
			doc := saveRunR(t, e1, tc.clean, step)
			if doc.GPUs[0].RawCounterJoules == nil {
				t.Fatalf("saved state %+v: want GPU 0's raw counter", doc)
			}
			saved, savedRaw := doc.GPUs[0].EnergyJoules, *doc.GPUs[0].RawCounterJoules
			if tc.noRaw {
				dropRawCounters(t, e1, doc)
			}
			// the exporter is down for 5 s; the GPU draws on
			for range 50 {
				clk.Advance(100 * time.Millisecond)
				r.tick(100 * time.Millisecond)
			}
			if tc.reset {
				r.reset()
			}
			b := &firstRaw{Backend: r.open(t)}
			e2, err := newExp(Config{Backend: b, Clock: clk, StoragePath: dir, APIToken: testToken})
			if err != nil {
				t.Fatal(err)
			}
			defer e2.Close()
			e2.SampleOnce()
			if b.raw == nil {
				t.Fatal("no raw counter read after the restart")
			}
			got := gatheredEnergy(t, e2)
			bridged := saved + *b.raw - savedRaw
			switch {
			case !tc.reset && !tc.noRaw:
				if math.Abs(got-bridged) > 1e-9*bridged || *b.raw-savedRaw < 5*60 {
					t.Errorf("counter %.6f J after the restart, want %.6f J: the saved %.3f J plus the raw advance %.3f J (the downtime's energy included)",
						got, bridged, saved, *b.raw-savedRaw)
				}
			case tc.clean:
				if got != saved {
					t.Errorf("counter %.6f J, want the clean save's %.6f J (not bridged: raw %.3f J, saved raw %.3f J)", got, saved, *b.raw, savedRaw)
				}
			default:
				if got != 0 {
					t.Errorf("counter %.6f J after a crash without a raw bridge, want 0 (a reset; bridged would be %.3f J)", got, bridged)
				}
			}
			st, ok := e2.RunStatus("r")
			if !ok || len(st.Gaps) != 1 || st.Gaps[0].Reason != "exporter_restarted" {
				t.Fatalf("restored run %v: gaps %+v, want the exporter_restarted gap", ok, st.Gaps)
			}
			// The gap says which GPUs' downtime energy the run counts.
			var wantBridged []int
			if !tc.reset && !tc.noRaw {
				for i := range st.GPUs {
					wantBridged = append(wantBridged, i)
				}
			}
			if got := st.Gaps[0].EnergyBridgedGPUs; !slices.Equal(got, wantBridged) {
				t.Errorf("gap's energy-bridged GPUs %v, want %v", got, wantBridged)
			}
		})
	}
}

// saveRunR starts run "r" (idle, every GPU) on e after a second of
// sampling, samples 2 s more and saves, gracefully or not (a crash serves
// one more second, never saved), closes e and returns what it saved.
func saveRunR(t *testing.T, e *Exporter, clean bool, step func(*Exporter, time.Duration)) activeRunsDoc {
	t.Helper()
	step(e, time.Second)
	srv := httptest.NewServer(e.Handler())
	c, _ := phaseapi.NewClient(srv.URL, testToken, nil)
	if _, err := c.StartPhase(t.Context(), "r", contract.Idle); err != nil {
		t.Fatal(err)
	}
	srv.Close()
	step(e, 2*time.Second)
	e.save(clean)
	if !clean {
		step(e, time.Second) // served, never saved
	}
	e.Close()
	var doc activeRunsDoc
	if ok, err := e.store.read(activeRunsFile, &doc); !ok || err != nil {
		t.Fatalf("saved state %+v (%v, %v)", doc, ok, err)
	}
	return doc
}

// dropRawCounters rewrites the saved state as a version 1 file, from
// before the GPUs' raw counter values were saved.
func dropRawCounters(t *testing.T, e *Exporter, doc activeRunsDoc) {
	t.Helper()
	doc.Version = 1
	for i := range doc.GPUs {
		doc.GPUs[i].RawCounterJoules = nil
	}
	if err := e.store.write(activeRunsFile, doc); err != nil {
		t.Fatal(err)
	}
}

// TestRestartBridgeSim is testRestartBridge on simulated GPUs with an
// energy counter: one simulator outlives both exporters, its counter
// offset as a driver's (counting since the driver loaded).
func TestRestartBridgeSim(t *testing.T) {
	testRestartBridge(t, func(clk *fakeClock) restartRig {
		sim, err := gpu.NewSim(gpu.SimConfig{GPUs: 2, Seed: 3, NoiseWatts: 0.5, EnergyCounter: true, Clock: clk})
		if err != nil {
			t.Fatal(err)
		}
		off := 1e6
		return restartRig{
			open:  func(*testing.T) gpu.Backend { return keepOpen{offsetCounter{sim, off}} },
			tick:  func(time.Duration) {},
			reset: func() { off = 0 },
		}
	})
}

// keepOpen is a backend whose Close leaves the hardware running.
type keepOpen struct{ gpu.Backend }

func (keepOpen) Close() error { return nil }
