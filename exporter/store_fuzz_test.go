package exporter

import (
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/joulemark/joulemark/internal/contract"
	"github.com/joulemark/joulemark/internal/gpu"
	"github.com/joulemark/joulemark/internal/phaseapi"
)

// FuzzStateFiles: whatever the state files hold (a disk that lies, a hand
// edit, a file from another version), the exporter either refuses to start
// with a state error or starts, samples, serves /metrics and the run's
// status and closes; it never panics. The seeds are what an exporter
// saved mid-run (gracefully, after a crash, with a GPU missing at the
// restart) and the refusal table's documents.
func FuzzStateFiles(f *testing.F) {
	for _, clean := range []bool{true, false} {
		ids, active := savedState(f, clean)
		f.Add(ids, active)
	}
	f.Add([]byte(`{"version":1,"run_ids":["r1"]}`), []byte(`{"version":2,"saved_at_unix_ns":1,"run_ids":1,"gpus":[{"gpu":0,"uuid":"GPU-5e000000-0000-4000-8000-000000000000","energy_joules":5},{"gpu":1,"uuid":"GPU-5e000000-0000-4000-8000-000000000001","energy_joules":5,"missing":true}],"runs":[{"run_id":"r1","phases":[{"phase":"idle","start":{"time_unix_ns":1,"energy_joules":[1,1]}}],"idle_power":[{"n":1,"mean":70,"m2":0},{"n":1,"mean":70,"m2":0}],"idle_compute_processes":[0,0],"gaps":[{"start":0,"end":1,"reason":"exporter_restarted","gpus":[1],"open":true}],"absent_gpus":[{"gpu":1,"uuid":"GPU-5e000000-0000-4000-8000-000000000001","energy_joules":1,"gap":0}],"release":{"state":"not_started"}}]}`))
	// the GPUs listed in another order, and a third one vanished since
	f.Add([]byte(`{"version":1,"run_ids":["r1"]}`), []byte(`{"version":2,"saved_at_unix_ns":1,"run_ids":1,"boot_id":"b","gpus":[{"gpu":0,"uuid":"GPU-5e000000-0000-4000-8000-000000000001","energy_joules":5,"raw_counter_joules":9,"driver_version":"sim","power_limit_watts":700},{"gpu":1,"uuid":"GPU-gone","energy_joules":5},{"gpu":2,"uuid":"GPU-5e000000-0000-4000-8000-000000000000","energy_joules":7}],"runs":[{"run_id":"r1","phases":[{"phase":"idle","start":{"time_unix_ns":1,"energy_joules":[1,2,3]}}],"idle_power":[{"n":1,"mean":70,"m2":0},{"n":1,"mean":70,"m2":0},{"n":1,"mean":70,"m2":0}],"idle_compute_processes":[0,0,0],"gaps":[{"start":0,"end":1,"reason":"exporter_restarted","gpus":[1],"energy_bridged_gpus":[1]}],"release":{"state":"not_started"}}]}`))
	f.Fuzz(func(t *testing.T, ids, active []byte) {
		dir := t.TempDir()
		for name, b := range map[string][]byte{runIDsFile: ids, activeRunsFile: active} {
			if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		clk := newFakeClock()
		sim, err := gpu.NewSim(gpu.SimConfig{GPUs: 2, Seed: 1, EnergyCounter: true, Clock: clk})
		if err != nil {
			t.Fatal(err)
		}
		e, err := newExp(Config{Backend: sim, Clock: clk, StoragePath: dir, APIToken: testToken})
		if err != nil {
			return // refused: the refusal table checks the error says what and where
		}
		defer e.Close()
		for range 3 {
			clk.Advance(100 * time.Millisecond)
			e.SampleOnce()
		}
		e.Handler().ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/metrics", nil))
		e.RunStatus("r1")
		e.save(true)
	})
}

// savedState is what an exporter on two simulated GPUs saves with run r1
// active in its idle phase: after a graceful stop, or its last periodic
// save before a crash.
func savedState(f *testing.F, clean bool) (ids, active []byte) {
	dir := f.TempDir()
	clk := newFakeClock()
	sim, err := gpu.NewSim(gpu.SimConfig{GPUs: 2, Seed: 1, EnergyCounter: true, Clock: clk})
	if err != nil {
		f.Fatal(err)
	}
	e, err := newExp(Config{Backend: sim, Clock: clk, StoragePath: dir, APIToken: testToken})
	if err != nil {
		f.Fatal(err)
	}
	srv := httptest.NewServer(e.Handler())
	c, _ := phaseapi.NewClient(srv.URL, testToken, nil)
	if _, err := c.StartPhase(f.Context(), "r1", contract.Idle); err != nil {
		f.Fatal(err)
	}
	srv.Close()
	for range 10 {
		clk.Advance(100 * time.Millisecond)
		e.SampleOnce()
	}
	e.save(clean)
	e.Close()
	for _, p := range []struct {
		name string
		b    *[]byte
	}{{runIDsFile, &ids}, {activeRunsFile, &active}} {
		if *p.b, err = os.ReadFile(filepath.Join(dir, p.name)); err != nil {
			f.Fatal(err)
		}
	}
	return ids, active
}
