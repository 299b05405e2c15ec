package exporter

import (
	"errors"
	"math"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/joulemark/joulemark/internal/contract"
	"github.com/joulemark/joulemark/internal/gpu"
	"github.com/joulemark/joulemark/internal/phaseapi"
	dto "github.com/prometheus/client_model/go"
)

// missingRig is a restartRig whose GPU 1 can fail to open (hide) and be
// replaced by another GPU (swap: another UUID in its slot).
type missingRig struct {
	restartRig
	hide func(hidden bool)
	swap func()
}

// otherUUID is the GPU swapped into slot 1.
const otherUUID = "GPU-0the0000-0000-4000-8000-000000000001"

// slot is GPU 1's state on a simulated rig.
type slot struct {
	mu             sync.Mutex
	hidden, others bool
}

// slotBackend fails GPU 1 while its slot is hidden (listed without a
// UUID, reads fail) and lists it with otherUUID once swapped.
type slotBackend struct {
	gpu.Backend
	s *slot
}

func (b slotBackend) Devices() []gpu.Device {
	ds := slices.Clone(b.Backend.Devices())
	b.s.mu.Lock()
	defer b.s.mu.Unlock()
	switch {
	case b.s.hidden:
		ds[1].UUID, ds[1].Err = "", "GPU failed to open (test)"
	case b.s.others:
		ds[1].UUID = otherUUID
	}
	return ds
}

func (b slotBackend) Sample(i int) (gpu.Sample, error) {
	b.s.mu.Lock()
	hidden := b.s.hidden
	b.s.mu.Unlock()
	if i == 1 && hidden {
		return gpu.Sample{}, errors.New("GPU not open (test)")
	}
	return b.Backend.Sample(i)
}

// rawRec records GPU 1's first and latest raw energy counter.
type rawRec struct {
	gpu.Backend
	mu          sync.Mutex
	first, last *float64
}

func (r *rawRec) Sample(i int) (gpu.Sample, error) {
	s, err := r.Backend.Sample(i)
	r.mu.Lock()
	defer r.mu.Unlock()
	if i == 1 && err == nil && s.HasEnergy {
		v := s.EnergyJoules
		if r.first == nil {
			r.first = &v
		}
		r.last = &v
	}
	return s, err
}

// restartMissingCase is one case of testRestartMissing.
type restartMissingCase struct {
	name         string
	clean, noRaw bool
	phaseMissing bool   // a phase ends while GPU 1 is missing
	reopen       string // "same", "other" or "" (never)
}

var restartMissingCases = []restartMissingCase{
	{"graceful, reopens", true, false, false, "same"},
	{"crash, reopens", false, false, false, "same"},
	{"crash, state without raw value, reopens", false, true, false, "same"},
	{"graceful, phase ends while missing, reopens", true, false, true, "same"},
	{"crash, phase ends while missing, reopens", false, false, true, "same"},
	{"graceful, another GPU opens", true, false, false, "other"},
	{"crash, phase ends while missing, another GPU opens", false, false, true, "other"},
	{"graceful, phase ends while missing, never opens", true, false, true, ""},
}

// savedGPU1 is what the save held for GPU 1 and run r.
type savedGPU1 struct {
	uuid                string
	energy, raw, start1 float64 // GPU 1's counter and raw counter at the save, its counter at idle's start
	start0              float64 // GPU 0's counter at idle's start
	savedAt             float64
}

// testRestartMissing: a run measuring a GPU that does not open at the
// restart comes back with everything it had; the GPU's own gap lasts from
// the save until it opens. Its phases count its energy up to the save
// (exactly the saved counter minus the phase's start), and when it opens
// with its saved UUID it is measured again: a phase running since before
// the save continues, the downtime counted when the GPU's own counter
// bridged it; a phase begun while it was missing counts from its opening.
// Another GPU in its place is never the run's. Each case fails with the
// restore of such runs switched off (they are not restored).
func testRestartMissing(t *testing.T, rig func(clk *fakeClock) missingRig) {
	for _, tc := range restartMissingCases {
		t.Run(tc.name, func(t *testing.T) {
			clk := newFakeClock()
			r := rig(clk)
			dir := t.TempDir()
			step := func(e *Exporter, d time.Duration) {
				for range int(d / (100 * time.Millisecond)) {
					clk.Advance(100 * time.Millisecond)
					r.tick(100 * time.Millisecond)
					e.SampleOnce()
				}
			}
			sv := runUntilSave(t, r.restartRig, clk, dir, tc, step)
			for range 50 { // the exporter is down for 5 s
				clk.Advance(100 * time.Millisecond)
				r.tick(100 * time.Millisecond)
			}
			r.hide(true)
			b := &rawRec{Backend: r.open(t)}
			e2, err := newExp(Config{Backend: b, Clock: clk, StoragePath: dir, APIToken: testToken})
			if err != nil {
				t.Fatal(err)
			}
			defer e2.Close()
			srv := httptest.NewServer(e2.Handler())
			defer srv.Close()
			c, _ := phaseapi.NewClient(srv.URL, testToken, nil)
			w := seriesWatch{t: t, e: e2, uuid: sv.uuid, last: math.Inf(-1)}
			step = w.wrap(step)
			step(e2, 2*time.Second)
			upToSave := sv.energy - sv.start1
			checkMissing(t, e2, sv, upToSave)
			if tc.phaseMissing {
				endIdle(t, e2, c, sv, upToSave, func() { step(e2, time.Second) })
			}
			if tc.reopen == "other" {
				r.swap()
			}
			if tc.reopen != "" {
				r.hide(false)
				step(e2, 8*time.Second) // past the NVML retries
				if b.first == nil {
					t.Fatal("GPU 1 was not read after it opened")
				}
			}
			checkAfter(t, e2, tc, sv, b)
			if _, err := c.EndRun(t.Context(), "r"); err != nil {
				t.Fatal(err)
			}
			checkEnded(t, e2, tc)
		})
	}
}

// runUntilSave runs run "r" (every GPU, idle) on a first exporter until
// its save (graceful or not) and returns what was saved for GPU 1.
func runUntilSave(t *testing.T, r restartRig, clk *fakeClock, dir string, tc restartMissingCase, step func(*Exporter, time.Duration)) savedGPU1 {
	e1, err := newExp(Config{Backend: r.open(t), Clock: clk, StoragePath: dir, APIToken: testToken})
	if err != nil {
		t.Fatal(err)
	}
	doc := saveRunR(t, e1, tc.clean, step)
	if doc.GPUs[1].RawCounterJoules == nil || len(doc.Runs) != 1 {
		t.Fatalf("saved state %+v: want GPU 1's raw counter and run r", doc)
	}
	sv := savedGPU1{uuid: doc.GPUs[1].UUID, energy: doc.GPUs[1].EnergyJoules, raw: *doc.GPUs[1].RawCounterJoules,
		start1: doc.Runs[0].Phases[0].Start.EnergyJoules[1], start0: doc.Runs[0].Phases[0].Start.EnergyJoules[0], savedAt: float64(doc.SavedAt) / 1e9}
	if tc.noRaw {
		dropRawCounters(t, e1, doc)
	}
	return sv
}

// endIdle ends run r's idle phase while GPU 1 is missing: GPU 1's idle
// energy is its energy up to the save, said to be missing for part of
// the phase, and GPU 0's is exactly its counter's advance over the phase
// (bridged across the restart: the raw counter is intact in those cases).
func endIdle(t *testing.T, e *Exporter, c *phaseapi.Client, sv savedGPU1, upToSave float64, step func()) {
	t.Helper()
	at, ok := gatheredGPUEnergy(t, e, "0")
	if _, err := c.StartPhase(t.Context(), "r", contract.Startup); !ok || err != nil {
		t.Fatalf("GPU 0's counter served %v; startup: %v", ok, err)
	}
	step()
	if g := phaseGPU(t, e, "r", contract.Idle); g.EnergyJoules != upToSave || g.MissingSeconds <= 0 {
		t.Errorf("idle ended while GPU 1 was missing: %+v, want %.6f J (up to the save) and its missing seconds", g, upToSave)
	}
	st, _ := e.RunStatus("r")
	g0 := st.Phases[0].GPUs[0]
	if want := at - sv.start0; g0.GPU != 0 || math.Abs(g0.EnergyJoules-want) > 1e-9*want || g0.MissingSeconds != 0 {
		t.Errorf("idle on GPU 0: %+v, want %.6f J (its counter at idle's end minus at its start), nothing missing", g0, want)
	}
}

// seriesWatch scrapes run r's idle energy series of GPU 1 after every
// sample: present under the saved UUID, never going back.
type seriesWatch struct {
	t    *testing.T
	e    *Exporter
	uuid string
	last float64
}

func (w *seriesWatch) wrap(step func(*Exporter, time.Duration)) func(*Exporter, time.Duration) {
	return func(e *Exporter, d time.Duration) {
		for range int(d / (100 * time.Millisecond)) {
			step(e, 100*time.Millisecond)
			v, ok := gatheredPhaseEnergy(w.t, w.e, "r", contract.Idle, "1", w.uuid)
			if !ok || v < w.last {
				w.t.Fatalf("/metrics idle energy of GPU 1 (uuid %s): %v (served %v), before %v: want it served and never going back", w.uuid, v, ok, w.last)
			}
			w.last = v
		}
	}
}

// checkMissing: while GPU 1 is missing, the run is restored with its gap
// open and GPU 1's idle energy up to the save, on the API and on
// /metrics (under its saved UUID); GPU 1's counter is not served.
func checkMissing(t *testing.T, e *Exporter, sv savedGPU1, upToSave float64) {
	t.Helper()
	st, ok := e.RunStatus("r")
	if !ok || st.State != phaseapi.RunActive {
		t.Fatalf("run measuring the GPU not open: %+v (found %v), want it restored and active", st, ok)
	}
	if g := gpuGap(st); g == nil || !g.Open || g.Start != sv.savedAt {
		t.Errorf("gaps %+v: want GPU 1's own gap, open, from the save (%v)", st.Gaps, sv.savedAt)
	}
	if g := phaseGPU(t, e, "r", contract.Idle); g.EnergyJoules != upToSave || g.UUID != sv.uuid {
		t.Errorf("idle on GPU 1 while missing: %+v, want %.6f J (the saved counter minus idle's start) under %s", g, upToSave, sv.uuid)
	}
	if v, ok := gatheredPhaseEnergy(t, e, "r", contract.Idle, "1", sv.uuid); !ok || v != upToSave {
		t.Errorf("/metrics idle energy of GPU 1 (uuid %s): %v (%v), want %.6f J", sv.uuid, v, ok, upToSave)
	}
	if _, ok := gatheredGPUEnergy(t, e, "1"); ok {
		t.Error("GPU 1's energy counter served while it is missing")
	}
}

// checkAfter checks GPU 1's energy in the run once it opened (or not).
func checkAfter(t *testing.T, e *Exporter, tc restartMissingCase, sv savedGPU1, b *rawRec) {
	t.Helper()
	st, _ := e.RunStatus("r")
	g := gpuGap(st)
	idle := phaseGPU(t, e, "r", contract.Idle)
	upToSave := sv.energy - sv.start1
	switch tc.reopen {
	case "same":
		bridged := !tc.noRaw && !tc.phaseMissing
		if g == nil || g.Open || g.End <= g.Start || slices.Contains(g.EnergyBridgedGPUs, 1) != bridged {
			t.Errorf("gap of GPU 1 after it opened: %+v, want it closed, energy bridged %v", g, bridged)
		}
		after := *b.last - *b.first // measured since it opened
		if bridged {
			after = *b.last - sv.raw // the gap's energy included
		}
		want, got := upToSave+after, idle.EnergyJoules
		if tc.phaseMissing {
			want, got = after, phaseGPU(t, e, "r", contract.Startup).EnergyJoules
			if idle.EnergyJoules != upToSave {
				t.Errorf("idle on GPU 1 %.6f J, want %.6f J: it ended while GPU 1 was missing", idle.EnergyJoules, upToSave)
			}
		}
		if math.Abs(got-want) > 1e-9*want || after < 60 {
			t.Errorf("running phase on GPU 1 after it opened: %.6f J, want %.6f J (%.6f J since the save or the opening)", got, want, after)
		}
	case "other":
		if g == nil || !g.Open {
			t.Errorf("gap of GPU 1 after another GPU opened: %+v, want it open until the run's end", g)
		}
		if idle.EnergyJoules != upToSave || idle.UUID != sv.uuid {
			t.Errorf("idle on GPU 1 after another GPU opened: %+v, want %.6f J (up to the save) under %s", idle, upToSave, sv.uuid)
		}
		if v, ok := gatheredGPUEnergy(t, e, "1"); !ok || math.Abs(v-(*b.last-*b.first)) > 1e-6 {
			t.Errorf("the other GPU's counter %v (%v), want it from 0: %.6f J", v, ok, *b.last-*b.first)
		}
	}
	if tc.phaseMissing && tc.reopen != "same" {
		if su := phaseGPU(t, e, "r", contract.Startup); su.EnergyJoules != 0 {
			t.Errorf("startup on GPU 1 (begun while it was missing, never opened as the run's): %.6f J, want 0", su.EnergyJoules)
		}
	}
}

// checkEnded: an ended run's gaps are closed, GPU 1's at the run's end
// when it never opened as the run's.
func checkEnded(t *testing.T, e *Exporter, tc restartMissingCase) {
	t.Helper()
	st, _ := e.RunStatus("r")
	g := gpuGap(st)
	last := st.Phases[len(st.Phases)-1]
	if g == nil || g.Open || (tc.reopen != "same" && (last.End == nil || g.End != *last.End)) {
		t.Errorf("ended run's gap of GPU 1: %+v (run end %v), want it closed (at the run's end unless GPU 1 came back)", g, last.End)
	}
}

// gpuGap is the status's gap of GPU 1's own.
func gpuGap(st phaseapi.RunStatus) *phaseapi.Gap {
	for k, g := range st.Gaps {
		if slices.Equal(g.GPUs, []int{1}) {
			return &st.Gaps[k]
		}
	}
	return nil
}

// phaseGPU is GPU 1's entry of run id's phase p.
func phaseGPU(t *testing.T, e *Exporter, id string, p contract.Phase) phaseapi.GPUEnergy {
	t.Helper()
	st, _ := e.RunStatus(id)
	for _, ph := range st.Phases {
		if ph.Phase != p {
			continue
		}
		for _, g := range ph.GPUs {
			if g.GPU == 1 {
				return g
			}
		}
	}
	t.Fatalf("run %s: no phase %s on GPU 1: %+v", id, p, st.Phases)
	return phaseapi.GPUEnergy{}
}

// gatheredPhaseEnergy is the phase energy series of run id, phase p, GPU
// gpu with that uuid label.
func gatheredPhaseEnergy(t *testing.T, e *Exporter, id string, p contract.Phase, gpuIdx, uuid string) (float64, bool) {
	t.Helper()
	return gatheredValue(t, e, contract.PhaseEnergy, map[string]string{"run_id": id, "phase": string(p), "gpu": gpuIdx, "uuid": uuid})
}

// gatheredGPUEnergy is GPU gpu's energy counter on /metrics.
func gatheredGPUEnergy(t *testing.T, e *Exporter, gpuIdx string) (float64, bool) {
	t.Helper()
	return gatheredValue(t, e, contract.GPUEnergy, map[string]string{"gpu": gpuIdx})
}

// gatheredValue is the value of the series of family name that has the
// labels want.
func gatheredValue(t *testing.T, e *Exporter, name string, want map[string]string) (float64, bool) {
	t.Helper()
	mfs, err := e.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	return seriesValue(mfs, name, want)
}

// seriesValue is the value of the series of family name in mfs that has
// the labels want (and maybe more).
func seriesValue(mfs []*dto.MetricFamily, name string, want map[string]string) (float64, bool) {
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			have := map[string]string{}
			for _, l := range m.GetLabel() {
				have[l.GetName()] = l.GetValue()
			}
			for k, v := range want {
				if have[k] != v {
					continue next
				}
			}
			if m.GetCounter() != nil {
				return m.GetCounter().GetValue(), true
			}
			return m.GetGauge().GetValue(), true
		}
	}
	return 0, false
}

// TestRestartMissingSim is testRestartMissing on simulated GPUs with an
// energy counter: one simulator outlives both exporters.
func TestRestartMissingSim(t *testing.T) {
	testRestartMissing(t, func(clk *fakeClock) missingRig {
		sim, err := gpu.NewSim(gpu.SimConfig{GPUs: 2, Seed: 3, NoiseWatts: 0.5, EnergyCounter: true, Clock: clk})
		if err != nil {
			t.Fatal(err)
		}
		s := &slot{}
		return missingRig{
			restartRig: restartRig{
				open: func(*testing.T) gpu.Backend { return slotBackend{keepOpen{offsetCounter{sim, 1e6}}, s} },
				tick: func(time.Duration) {},
			},
			hide: func(h bool) { s.mu.Lock(); s.hidden = h; s.mu.Unlock() },
			swap: func() { s.mu.Lock(); s.others = true; s.mu.Unlock() },
		}
	})
}

// TestRestartTwiceWhileMissing: a second restart while the run's GPU is
// still missing keeps its absence (the state file's absent_gpus and the
// GPU's missing entry): the GPU's gap still runs from the first save, and
// when the GPU opens (at the second restart or later) with its saved UUID
// it resumes, its own counter bridging both downtimes and the time between;
// another GPU stays out. Fails with the absences not saved (the second
// restart then measures the run's GPU 1 from 0 at the first save's
// boundaries, or drops the gap).
func TestRestartTwiceWhileMissing(t *testing.T) {
	for _, tc := range []struct {
		name                 string
		openAtRestart, other bool
	}{
		{"opens later", false, false},
		{"opens at the second restart", true, false},
		{"another GPU opens at the second restart", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := newFakeClock()
			sim, err := gpu.NewSim(gpu.SimConfig{GPUs: 2, Seed: 3, NoiseWatts: 0.5, EnergyCounter: true, Clock: clk})
			if err != nil {
				t.Fatal(err)
			}
			s := &slot{}
			r := restartRig{open: func(*testing.T) gpu.Backend { return slotBackend{keepOpen{offsetCounter{sim, 1e6}}, s} }, tick: func(time.Duration) {}}
			step := func(e *Exporter, d time.Duration) {
				for range int(d / (100 * time.Millisecond)) {
					clk.Advance(100 * time.Millisecond)
					e.SampleOnce()
				}
			}
			dir := t.TempDir()
			sv := runUntilSave(t, r, clk, dir, restartMissingCase{clean: true}, step)
			s.hidden = true
			clk.Advance(5 * time.Second)
			e2, err := newExp(Config{Backend: r.open(t), Clock: clk, StoragePath: dir, APIToken: testToken})
			if err != nil {
				t.Fatal(err)
			}
			step(e2, 2*time.Second)
			e2.save(true)
			e2.Close()
			clk.Advance(5 * time.Second)
			s.hidden, s.others = !tc.openAtRestart, tc.other
			b := &rawRec{Backend: r.open(t)}
			e3, err := newExp(Config{Backend: b, Clock: clk, StoragePath: dir, APIToken: testToken})
			if err != nil {
				t.Fatal(err)
			}
			defer e3.Close()
			step(e3, time.Second)
			if !tc.openAtRestart {
				checkMissing(t, e3, sv, sv.energy-sv.start1)
				s.mu.Lock()
				s.hidden = false
				s.mu.Unlock()
				step(e3, 2*time.Second)
			}
			checkTwice(t, e3, tc.other, sv, b)
		})
	}
}

// checkTwice checks run r's GPU 1 once the GPU opened after two restarts.
func checkTwice(t *testing.T, e *Exporter, other bool, sv savedGPU1, b *rawRec) {
	t.Helper()
	st, ok := e.RunStatus("r")
	if !ok || len(st.Gaps) != 3 {
		t.Fatalf("run after two restarts: %+v (found %v), want its two restart gaps and GPU 1's", st.Gaps, ok)
	}
	g, idle := gpuGap(st), phaseGPU(t, e, "r", contract.Idle)
	want := sv.energy - sv.start1
	if !other {
		want += *b.last - sv.raw // the GPU's counter since the first save
	}
	if g == nil || g.Start != sv.savedAt || g.Open != other || slices.Contains(g.EnergyBridgedGPUs, 1) == other {
		t.Errorf("GPU 1's gap %+v: want it from the first save (%v), open %v, energy bridged %v", g, sv.savedAt, other, !other)
	}
	if math.Abs(idle.EnergyJoules-want) > 1e-9*want || idle.UUID != sv.uuid {
		t.Errorf("idle on GPU 1: %+v, want %.6f J under %s", idle, want, sv.uuid)
	}
}
