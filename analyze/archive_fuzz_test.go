package analyze

import (
	"encoding/json"
	"io"
	"os"
	"testing"

	"github.com/joulemark/joulemark/internal/contract"
	"github.com/joulemark/joulemark/internal/phaseapi"
	"github.com/joulemark/joulemark/internal/runarchive"
	"github.com/joulemark/joulemark/report"
)

// FuzzBenchArchive: whatever a run archive's manifest.json and phases.json
// hold (a hand edit, another version, a truncated copy), analyze refuses
// them with an error or takes them into a report it can write: reading
// the archive, filling in what Prometheus lacks from the exporters' views
// (the fixture lost its release markers), computing, flagging gaps and
// writing report.md and report.json never panic.
func FuzzBenchArchive(f *testing.F) {
	d := fixture()
	st := phaseapi.RunStatus{RunID: d.RunID, State: phaseapi.RunEnded, GPUs: []phaseapi.GPUInfo{{GPU: 0, UUID: "GPU-0"}, {GPU: 1, UUID: "GPU-1"}},
		Gaps: []phaseapi.Gap{{Start: fixtureBase + 40, End: fixtureBase + 47, Reason: contract.GapExporterRestarted, EnergyBridgedGPUs: []int{0}},
			{Start: fixtureBase + 50, End: fixtureBase + 60, Reason: contract.GapExporterRestarted, GPUs: []int{1}, Open: true}}}
	for _, ph := range contract.Phases {
		b := d.Phases[string(ph)]
		st.Phases = append(st.Phases, phaseapi.PhaseStatus{Phase: ph, Start: b.Start, End: new(b.End), EnergyJoules: d.PhaseEnergy[string(ph)],
			GPUs: []phaseapi.GPUEnergy{{GPU: 0, UUID: "GPU-0"}, {GPU: 1, UUID: "GPU-1"}}})
	}
	phases, _ := json.Marshal(runarchive.Phases{RunID: d.RunID, Exporters: []runarchive.ExporterStatus{{URL: "http://a:9400", Status: &st}}})
	manifest, err := os.ReadFile("testdata/archive/fixture-1/manifest.json")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(manifest, phases)
	f.Add([]byte(`{"run_id":"fixture-1","flags":["client_cpu_saturated","client_could_not_keep_up"],"load":{"mode":"poisson","client_cpu_ratio":0.95,"lag_p99_seconds":0.2,"max_lag_seconds":0.05}}`), phases)
	f.Add([]byte(`{"run_id":"fixture-1","run_info":{"run_id":"fixture-1","mode":"attached"}}`), []byte(`{"run_id":"fixture-1","exporters":[{"url":"x","status":null}]}`))
	f.Fuzz(func(t *testing.T, manifest, phases []byte) {
		run, err := runarchive.Create(t.TempDir(), "fixture-1")
		if err != nil {
			t.Fatal(err)
		}
		for name, b := range map[string][]byte{runarchive.ManifestFile: manifest, runarchive.PhasesFile: phases, runarchive.RequestsFile: nil} {
			if err := run.WriteFile(name, b); err != nil {
				t.Fatal(err)
			}
		}
		arch, err := readBenchArchive(run, "fixture-1")
		if err != nil {
			return
		}
		d := fixture()
		delete(d.Phases, string(contract.Release)) // Prometheus lost it: the archive fills it in
		d.ReleaseClosed = nil
		if a := combineViews(arch.views); a != nil {
			a.fillPhases(d)
			a.fillEnergy(d, map[gpuKey]bool{})
			a.fillRelease(d)
		}
		if err := arch.fillRun(d); err != nil {
			t.Fatal(err)
		}
		r, _, err := Compute(Input{Run: d, Archive: arch}, fixtureParams(), report.CostInputs{})
		if err != nil {
			return
		}
		if err := WriteMarkdown(io.Discard, r); err != nil {
			t.Fatal(err)
		}
		if _, err := json.Marshal(r); err != nil {
			t.Fatalf("report.json: %v", err)
		}
	})
}
