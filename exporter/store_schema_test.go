package exporter

import (
	"context"
	"errors"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/joulemark/joulemark/internal/contract"
	"github.com/joulemark/joulemark/internal/gpu"
	"github.com/joulemark/joulemark/internal/phaseapi"
)

// TestStateFilesRefused: a state file that is not what this exporter
// writes (empty, unknown version or field, null list, trailing data,
// values out of range, the two files disagreeing) stops the exporter at
// start, with an error naming the file and the recovery command.
func TestStateFilesRefused(t *testing.T) {
	const gpus = `"gpus":[{"gpu":0,"uuid":"GPU-5e000000-0000-4000-8000-000000000000","energy_joules":5}]`
	okIDs := `{"version":1,"run_ids":["r1"]}`
	okRun := `{"run_id":"r1","phases":[{"phase":"idle","start":{"time_unix_ns":1,"energy_joules":[1]}}],"idle_power":[{"n":1,"mean":70,"m2":0}],"idle_compute_processes":[0],"release":{"state":"not_started"}}`
	for _, tc := range []struct {
		name, ids, active, file string
	}{
		{"empty object", `{}`, "", runIDsFile},
		{"null run ids", `{"version":1,"run_ids":null}`, "", runIDsFile},
		{"unknown version and field", `{"version":99,"ids":["r1"]}`, "", runIDsFile},
		{"unknown field", `{"version":1,"run_ids":["r1"],"x":1}`, "", runIDsFile},
		{"trailing data", okIDs + ` {}`, "", runIDsFile},
		{"invalid run id", `{"version":1,"run_ids":["a b"]}`, "", runIDsFile},
		{"active unknown version", okIDs, `{"version":3,"saved_at_unix_ns":1,` + gpus + `,"runs":[]}`, activeRunsFile},
		{"active null runs", okIDs, `{"version":2,"saved_at_unix_ns":1,` + gpus + `,"runs":null}`, activeRunsFile},
		{"active unknown field", okIDs, `{"version":2,"saved_at_unix_ns":1,"extra":1,` + gpus + `,"runs":[]}`, activeRunsFile},
		{"negative counter", okIDs, `{"version":2,"saved_at_unix_ns":1,"gpus":[{"gpu":0,"uuid":"GPU-5e000000-0000-4000-8000-000000000000","energy_joules":-1e18}],"runs":[]}`, activeRunsFile},
		{"huge counter", okIDs, `{"version":2,"saved_at_unix_ns":1,"gpus":[{"gpu":0,"uuid":"GPU-5e000000-0000-4000-8000-000000000000","energy_joules":1e308}],"runs":[]}`, activeRunsFile},
		{"negative raw counter", okIDs, `{"version":2,"saved_at_unix_ns":1,"gpus":[{"gpu":0,"uuid":"GPU-5e000000-0000-4000-8000-000000000000","energy_joules":1,"raw_counter_joules":-3}],"runs":[]}`, activeRunsFile},
		{"run ids deleted, run active", "", `{"version":2,"saved_at_unix_ns":1,"run_ids":1,` + gpus + `,"runs":[` + okRun + `]}`, runIDsFile},
		{"run ids deleted, none active", "", `{"version":2,"saved_at_unix_ns":1,"run_ids":1,` + gpus + `,"runs":[]}`, runIDsFile},
		{"run ids truncated", `{"version":1,"run_ids":["r1"]}`, `{"version":2,"saved_at_unix_ns":1,"run_ids":3,` + gpus + `,"runs":[]}`, runIDsFile},
		{"active run not in run ids", `{"version":1,"run_ids":["r0"]}`, `{"version":2,"saved_at_unix_ns":1,"run_ids":1,` + gpus + `,"runs":[` + okRun + `]}`, runIDsFile},
		{"run out of order", okIDs, `{"version":2,"saved_at_unix_ns":1,"run_ids":1,` + gpus + `,"runs":[` + strings.Replace(okRun, `"phases":[`, `"phases":[{"phase":"formal","start":{"time_unix_ns":1,"energy_joules":[1]}},`, 1) + `]}`, activeRunsFile},
		{"absent GPU with its gap out of range", okIDs, `{"version":2,"saved_at_unix_ns":1,"run_ids":1,` + gpus + `,"runs":[` + strings.Replace(okRun, `"release":`, `"absent_gpus":[{"gpu":0,"uuid":"GPU-x","energy_joules":1,"gap":3,"replaced":true}],"release":`, 1) + `]}`, activeRunsFile},
		{"absent GPU awaited but open at the save", okIDs, `{"version":2,"saved_at_unix_ns":1,"run_ids":1,` + gpus + `,"runs":[` + strings.Replace(okRun, `"release":`, `"gaps":[{"start":0,"end":0,"reason":"exporter_restarted","gpus":[0],"open":true}],"absent_gpus":[{"gpu":0,"uuid":"GPU-x","energy_joules":1,"gap":0}],"release":`, 1) + `]}`, activeRunsFile},
		{"run ID twice", `{"version":1,"run_ids":["r1","r2","r1"]}`, "", runIDsFile},
		{"active runs deleted", okIDs, "", activeRunsFile},
		{"too many gaps", okIDs, `{"version":2,"saved_at_unix_ns":1,"run_ids":1,` + gpus + `,"runs":[` + strings.Replace(okRun, `"release":`, `"gaps":[`+strings.Repeat(`{"start":0,"end":1,"reason":"exporter_restarted"},`, maxRunGaps)+`{"start":0,"end":1,"reason":"exporter_restarted"}],"release":`, 1) + `]}`, activeRunsFile},
		{"run without idle power", okIDs, `{"version":2,"saved_at_unix_ns":1,"run_ids":1,` + gpus + `,"runs":[` + strings.Replace(okRun, `"idle_power":[{"n":1,"mean":70,"m2":0}]`, `"idle_power":null`, 1) + `]}`, activeRunsFile},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if tc.ids != "" {
				writeState(t, dir, runIDsFile, tc.ids)
			}
			if tc.active != "" {
				writeState(t, dir, activeRunsFile, tc.active)
			}
			sim, _ := gpu.NewSim(gpu.SimConfig{GPUs: 1})
			_, err := newExp(Config{Backend: sim, StoragePath: dir})
			var se *stateError
			if !errors.As(err, &se) {
				t.Fatalf("New = %v, want a state error", err)
			}
			if msg := err.Error(); !strings.Contains(msg, filepath.Join(dir, tc.file)) || !strings.Contains(msg, "mv "+dir) && !strings.Contains(msg, "touch "+dir) {
				t.Errorf("error %q: want it to name %s and the recovery (mv, touch)", msg, tc.file)
			}
		})
	}
	t.Run("active runs moved aside", func(t *testing.T) {
		dir := t.TempDir()
		writeState(t, dir, runIDsFile, okIDs)
		writeState(t, dir, activeRunsFile+".broken", "lost")
		sim, _ := gpu.NewSim(gpu.SimConfig{GPUs: 1})
		e, err := newExp(Config{Backend: sim, StoragePath: dir})
		if err != nil {
			t.Fatalf("with %s.broken (the documented recovery): %v", activeRunsFile, err)
		}
		e.Close()
	})
	t.Run("valid", func(t *testing.T) {
		dir := t.TempDir()
		writeState(t, dir, runIDsFile, okIDs)
		writeState(t, dir, activeRunsFile, `{"version":2,"saved_at_unix_ns":1,"run_ids":1,`+gpus+`,"runs":[`+okRun+`]}`)
		sim, _ := gpu.NewSim(gpu.SimConfig{GPUs: 1})
		e, err := newExp(Config{Backend: sim, StoragePath: dir})
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		if _, ok := e.RunStatus("r1"); !ok {
			t.Error("the active run was not restored")
		}
	})
}

func writeState(t *testing.T, dir, name, body string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// failWrites makes the exporter's state writes of file name fail (all
// files when name is empty) while *fail is true.
func failWrites(e *Exporter, name string, fail *bool) {
	next := e.store.writeFile
	e.store.writeFile = func(p string, b []byte) error {
		if *fail && (name == "" || filepath.Base(p) == name) {
			return errors.New("no space left on device (injected)")
		}
		return next(p, b)
	}
}

// TestDurableAcks: a phase change, a new run id, a selector and an end are
// answered 2xx only once saved; when the save fails the answer is 503,
// nothing is applied, and the retry after the disk recovers succeeds.
func TestDurableAcks(t *testing.T) {
	ctx := context.Background()
	for _, file := range []string{runIDsFile, activeRunsFile} {
		t.Run(file, func(t *testing.T) {
			dir := t.TempDir()
			h := newHarness(t, gpu.SimConfig{GPUs: 2, Seed: 1}, Config{StoragePath: dir})
			fail := true
			failWrites(h.exp, file, &fail)
			_, err := h.client.StartPhaseSelect(ctx, "r1", contract.Idle, phaseapi.Selector{GPUs: []string{h.exp.gpus[1].dev.UUID}})
			if !phaseapi.IsStatus(err, http.StatusServiceUnavailable) {
				t.Fatalf("first phase with the disk failing: %v, want 503", err)
			}
			if _, ok := h.exp.RunStatus("r1"); ok {
				t.Error("the refused first phase was applied")
			}
			if _, err := h.client.Preflight(ctx, "r1"); err != nil {
				t.Errorf("pre-flight of the refused run id: %v, want it still free", err)
			}
			fail = false
			st, err := h.client.StartPhaseSelect(ctx, "r1", contract.Idle, phaseapi.Selector{GPUs: []string{h.exp.gpus[1].dev.UUID}})
			if err != nil || len(st.GPUs) != 1 {
				t.Fatalf("retry: %+v, %v; want the run on GPU 1", st, err)
			}
			h.step(time.Second)
			fail = true
			if _, err := h.client.StartPhase(ctx, "r1", contract.Formal); file == activeRunsFile && !phaseapi.IsStatus(err, http.StatusServiceUnavailable) {
				t.Fatalf("phase change with the disk failing: %v, want 503", err)
			}
			if file == activeRunsFile {
				st, _ := h.exp.RunStatus("r1")
				if len(st.Phases) != 1 || !st.Phases[0].Active {
					t.Errorf("after the refused change: phases %+v, want idle still running", st.Phases)
				}
				if _, err := h.client.EndRun(ctx, "r1"); !phaseapi.IsStatus(err, http.StatusServiceUnavailable) {
					t.Fatalf("end with the disk failing: %v, want 503", err)
				}
				if st, _ := h.exp.RunStatus("r1"); st.State != phaseapi.RunActive {
					t.Errorf("after the refused end: %s, want active", st.State)
				}
			}
			fail = false
			if _, err := h.client.StartPhase(ctx, "r1", contract.Formal); err != nil {
				t.Fatal(err)
			}
			// What was acknowledged is what a restart finds.
			h.exp.Close()
			h2 := newHarnessOn(t, h.clk, gpu.SimConfig{GPUs: 2, Seed: 1}, Config{StoragePath: dir})
			st2, ok := h2.exp.RunStatus("r1")
			if !ok || len(st2.Phases) != 2 || st2.Phases[1].Phase != contract.Formal || len(st2.GPUs) != 1 {
				t.Errorf("after a restart: %+v, want idle then formal on GPU 1", st2)
			}
		})
	}
}

// TestCounterNeverBelowServed: across a restart the GPU energy counter
// never goes below a value it served: after a graceful shutdown it
// continues from the clean save; after a crash it continues by the GPU's
// own counter's advance when the GPU has one, else it starts again from 0
// (a reset) rather than from the stale save. A running phase's energy
// goes on either way.
func TestCounterNeverBelowServed(t *testing.T) {
	for _, tc := range []struct {
		name           string
		clean, counter bool
		wantZero       bool
	}{
		{"graceful, integrated", true, false, false},
		{"graceful, counter", true, true, false},
		{"crash, integrated", false, false, true},
		{"crash, counter", false, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			simCfg := gpu.SimConfig{GPUs: 1, Seed: 2, EnergyCounter: tc.counter}
			cfg := Config{StoragePath: dir}
			// The driver's counter counts from its load, not the
			// exporter's start: a simulator's counter plus an offset.
			clk := newFakeClock()
			epoch := clk.Now()
			h := newHarnessOnWith(t, clk, simCfg, cfg, driverCounter(1000))
			h.post("r", contract.Idle)
			h.step(2 * time.Second)
			h.exp.save(tc.clean)
			saved := h.exp.gpus[0].energy
			h.step(3 * time.Second) // served, not saved unless the shutdown is graceful
			if tc.clean {
				h.exp.save(true)
			}
			served := h.exp.gpus[0].energy
			phaseBefore, _ := h.exp.RunStatus("r")
			h.exp.Close()
			h.clk.Advance(4 * time.Second)
			h2 := newHarnessOnWith(t, clk, simCfg, cfg, driverCounter(1000+h.sim.ExactEnergy(0, epoch, clk.Now())))
			got := gatheredEnergy(t, h2.exp)
			switch {
			case tc.wantZero && got > saved/2:
				t.Errorf("counter %.1f J after the crash, want a restart from 0, not from the stale save (%.1f J; served %.1f J)", got, saved, served)
			case !tc.wantZero && got < served:
				t.Errorf("counter %.1f J after the restart, below the %.1f J served before", got, served)
			}
			if tc.counter && !tc.clean && got < served+4*60 {
				t.Errorf("counter %.1f J: want the downtime (4 s at ≥ 60 W) bridged by the GPU's counter above %.1f J", got, served)
			}
			st, _ := h2.exp.RunStatus("r")
			if e0, e1 := phaseBefore.Phases[0].EnergyJoules, st.Phases[0].EnergyJoules; e1 < e0-5*70 || math.IsNaN(e1) {
				t.Errorf("idle energy %.1f J after the restart, %.1f J before: the running phase lost its energy", e1, e0)
			}
		})
	}
}

// gatheredEnergy is GPU 0's joulemark_gpu_energy_joules_total as served.
func gatheredEnergy(t *testing.T, e *Exporter) float64 {
	t.Helper()
	mfs, err := e.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "joulemark_gpu_energy_joules_total" {
			return mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	t.Fatal("no joulemark_gpu_energy_joules_total")
	return 0
}

// driverCounter offsets a backend's energy counter by off joules.
func driverCounter(off float64) func(gpu.Backend) gpu.Backend {
	return func(b gpu.Backend) gpu.Backend { return offsetCounter{b, off} }
}

type offsetCounter struct {
	gpu.Backend
	off float64
}

func (o offsetCounter) Sample(i int) (gpu.Sample, error) {
	s, err := o.Backend.Sample(i)
	if s.HasEnergy {
		s.EnergyJoules += o.off
	}
	return s, err
}

// TestSaveLoop: a started exporter saves its state on the timer with no
// run active, and a last time marked clean when it closes (run with -race
// once: the save loop against the samplers and the API).
func TestSaveLoop(t *testing.T) {
	dir := t.TempDir()
	sim, _ := gpu.NewSim(gpu.SimConfig{GPUs: 2})
	e, err := newExp(Config{Backend: sim, StoragePath: dir, Interval: 10 * time.Millisecond, SaveInterval: 20 * time.Millisecond, APIToken: testToken})
	if err != nil {
		t.Fatal(err)
	}
	e.Start(t.Context())
	srv := httptest.NewServer(e.Handler())
	defer srv.Close()
	c, _ := phaseapi.NewClient(srv.URL, testToken, nil)
	var doc activeRunsDoc
	for range 200 {
		if ok, _ := e.store.read(activeRunsFile, &doc); ok && doc.GPUs[0].EnergyJoules > 0 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if doc.GPUs == nil || doc.GPUs[0].EnergyJoules <= 0 || doc.Clean {
		t.Fatalf("periodic save with no run: %+v, want the counters, not clean", doc)
	}
	if _, err := c.StartPhase(context.Background(), "s1", contract.Idle); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	doc = activeRunsDoc{}
	if ok, err := e.store.read(activeRunsFile, &doc); !ok || err != nil || !doc.Clean || len(doc.Runs) != 1 {
		t.Errorf("after Close: %+v (%v, %v), want a clean save with the active run", doc, ok, err)
	}
}
