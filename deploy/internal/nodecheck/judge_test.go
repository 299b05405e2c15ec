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

// nodeRun is a closed lifecycle on GPU 0: idle 100–110 s, formal 110–140 s,
// release 140–150 s, with the given idle and formal energies.
func nodeRun(idleJ, formalJ float64) *phaseapi.RunStatus {
	end := 150.0
	gpu0 := func(j float64) []phaseapi.GPUEnergy { return []phaseapi.GPUEnergy{{GPU: 0, EnergyJoules: j}} }
	return &phaseapi.RunStatus{RunID: "nc-load-x", Phases: []phaseapi.PhaseStatus{
		{Phase: contract.Idle, Start: 100, GPUs: gpu0(idleJ)},
		{Phase: contract.Formal, Start: 110, GPUs: gpu0(formalJ)},
		{Phase: contract.Release, Start: 140, End: &end, GPUs: gpu0(1500)}},
		Release: phaseapi.ReleaseStatus{State: phaseapi.ReleaseClosed, ClosedBy: phaseapi.CriterionMemory}}
}

// TestNodeCheckJudge: a node whose formal power rose 10x over idle and whose
// exporter agrees with the counter passes; formal power at 1.4x idle, an
// energy 2% off the counter (either way), or no comparison at all fails,
// naming the figure, the measured value and the bound. Sim is not judged.
func TestNodeCheckJudge(t *testing.T) {
	agree := []CounterCompare{{Phase: "idle", Exporter: 700, Counter: 700}, {Phase: "formal", Exporter: 21000, Counter: 21000}}
	off := func(r float64) []CounterCompare {
		return []CounterCompare{agree[0], {Phase: "formal", Exporter: 21000 * (1 + r), Counter: 21000, DiffRatio: r}}
	}
	for _, tc := range []struct {
		name    string
		run     *phaseapi.RunStatus
		counter []CounterCompare
		fail    string // the failing check's name, "" to pass
		info    []string
	}{
		{"passing node", nodeRun(700, 21000), agree, "", nil},
		{"at the bounds", nodeRun(700, 3150), off(-0.0099), "", nil},
		{"power did not rise", nodeRun(700, 2940), agree, "formal_power_rose", []string{"1.400 x", "formal 98.0 W, idle 70.0 W", "bound >= 1.50 x"}},
		{"no formal phase", &phaseapi.RunStatus{Phases: nodeRun(700, 21000).Phases[:1]}, agree, "formal_power_rose", []string{"no idle or formal phase"}},
		{"energy 2% over", nodeRun(700, 21000), off(0.02), "phase_energy_vs_counter", []string{"formal +2.000% (exporter 21420.0 J, counter 21000.0 J) OUT OF BOUND", "bound |difference| <= 1.0%"}},
		{"energy 2% under", nodeRun(700, 21000), off(-0.02), "phase_energy_vs_counter", []string{"formal -2.000%", "OUT OF BOUND"}},
		{"no comparison", nodeRun(700, 21000), nil, "phase_energy_vs_counter", []string{"no phase compared"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := judge(&Report{Facts: &Facts{Backend: "nvml"}, Run: tc.run, Counter: tc.counter})
			if len(cs) != 2 {
				t.Fatalf("judged %d checks, want formal_power_rose and phase_energy_vs_counter: %+v", len(cs), cs)
			}
			err := failures(cs)
			if tc.fail == "" {
				if err != nil {
					t.Errorf("a good node failed: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), "check "+tc.fail+" failed") {
				t.Fatalf("want %s to fail, got %v", tc.fail, err)
			}
			for _, s := range tc.info {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("failure %q does not say %q", err, s)
				}
			}
		})
	}
	if cs := judge(&Report{Facts: &Facts{Backend: "sim"}, Run: nodeRun(700, 700)}); len(cs) != 0 {
		t.Errorf("sim (no load, no counter) judged: %+v", cs)
	}
}

// TestNodeCheckReportFails: the report command fails on a node whose
// formal power did not rise and whose formal energy is 2% off the counter
// read over the same boundaries (interpolated between the reads that
// bracket each post), with one line per failed check.
func TestNodeCheckReportFails(t *testing.T) {
	dir, out := t.TempDir(), t.TempDir()
	write := func(name string, v any) {
		b, _ := json.Marshal(v)
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("facts.json", Facts{Backend: "nvml"})
	write("poll.json", []Poll{})
	write("procs-host.json", ProcView{})
	write("load.json", Load{Exited: 145})
	write("elapsed.json", 90.0)
	write("run.json", nodeRun(700, 1224)) // 40.8 W formal against 70 W idle
	// the reads bracket each post; the counter over [110, 140] is 1200 J
	write("counter.idle.pre.json", Counters{Time: 99.9, Joules: []float64{993}})
	write("counter.idle.json", Counters{Time: 100.1, Joules: []float64{1007}})
	write("counter.formal.pre.json", Counters{Time: 109.8, Joules: []float64{1686}})
	write("counter.formal.json", Counters{Time: 110.2, Joules: []float64{1714}})
	write("counter.release.pre.json", Counters{Time: 139.5, Joules: []float64{2880}})
	write("counter.release.json", Counters{Time: 140.5, Joules: []float64{2920}})
	err := report(dir, out)
	if err == nil {
		t.Fatal("a node whose power did not rise and whose energy is 2% off passed")
	}
	for _, s := range []string{"check formal_power_rose failed", "0.583 x", "check phase_energy_vs_counter failed", "formal +2.000%"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("failure %q does not say %q", err, s)
		}
	}
	var r Report
	b, _ := os.ReadFile(filepath.Join(out, "node-check.json"))
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	if len(r.Counter) != 2 || !r.Counter[1].Bracketed || math.Abs(r.Counter[1].Counter-1200) > 1e-9 || math.Abs(r.Counter[0].Counter-700) > 1e-9 {
		t.Errorf("counter over the same boundaries: %+v", r.Counter)
	}
}
