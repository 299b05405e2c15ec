package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/joulemark/joulemark/internal/contract"
	"github.com/joulemark/joulemark/internal/phaseapi"
)

// TestReport: the report pairs the counter read after each phase post with
// the exporter's phase energy, with the reads' lags; a release that did not
// close after the engine's exit fails its check and the command.
func TestReport(t *testing.T) {
	dir, out := t.TempDir(), t.TempDir()
	write := func(name string, v any) {
		b, _ := json.Marshal(v)
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	end := 150.0
	gpu0 := func(j float64) []phaseapi.GPUEnergy { return []phaseapi.GPUEnergy{{GPU: 0, EnergyJoules: j}} }
	closed := phaseapi.RunStatus{RunID: "nc-load-x", Phases: []phaseapi.PhaseStatus{
		{Phase: contract.Idle, Start: 100, GPUs: gpu0(700)},
		{Phase: contract.Formal, Start: 110, GPUs: gpu0(21000)},
		{Phase: contract.Release, Start: 140, End: &end, GPUs: gpu0(1500)}},
		Release: phaseapi.ReleaseStatus{State: phaseapi.ReleaseClosed, ClosedBy: phaseapi.CriterionMemory}}
	write("facts.json", Facts{Backend: "nvml", DriverVersion: "570.1", KernelModule: "open"})
	write("poll.json", []Poll{{GPU: 0, Latencies: []Latency{{Call: "nvmlDeviceGetFieldValues", Calls: 10}}}})
	write("procs-host.json", ProcView{PIDs: [][]uint32{{42}}})
	write("load.json", Load{Exited: 145})
	write("elapsed.json", 90.0)
	write("counter.idle.json", Counters{Time: 100.2, Joules: []float64{1000}})
	write("counter.formal.json", Counters{Time: 110.3, Joules: []float64{1700}})
	write("counter.release.json", Counters{Time: 140.1, Joules: []float64{22910}})
	write("run.json", closed)
	if err := report(dir, out); err != nil {
		t.Fatal(err)
	}
	var r Report
	b, _ := os.ReadFile(filepath.Join(out, "node-check.json"))
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	if len(r.Counter) != 2 || r.Counter[0].Counter != 700 || math.Abs(r.Counter[1].DiffRatio-(21000-21210)/21210.0) > 1e-12 ||
		math.Abs(r.Counter[1].StartLag-0.3) > 1e-9 || math.Abs(r.Counter[1].EndLag-0.1) > 1e-9 {
		t.Errorf("counter comparison %+v", r.Counter)
	}
	if !strings.Contains(r.ProcsNote, "no view from a new PID namespace") {
		t.Errorf("missing unshare view not noted: %q", r.ProcsNote)
	}
	md, _ := os.ReadFile(filepath.Join(out, "node-check.md"))
	if !strings.Contains(string(md), "| formal | 21000.0 | 21210.0 |") {
		t.Errorf("markdown:\n%s", md)
	}
	// the release closed before the engine exited: the check fails
	end = 144
	write("run.json", closed)
	if err := report(dir, out); err == nil || !strings.Contains(err.Error(), "release_after_engine_exit") {
		t.Errorf("a release closed before the engine's exit passed: %v", err)
	}
}
