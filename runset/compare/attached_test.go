package compare

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/joulemark/joulemark/internal/contract"
	"github.com/joulemark/joulemark/runset"
)

// writeReport copies testdata report name to dir/<id>/report.json with
// the run id, mode and run.scenario set (scenario left to run.scenario, as
// analyze without --scenario writes it) and, for an attached run, no
// lifecycle figures.
func writeReport(t *testing.T, dir, name, id, mode string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "reports", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	doc["run_id"], doc["mode"] = id, mode
	delete(doc, "scenario")
	doc["run"] = map[string]any{"run_id": id, "model": "m", "scenario": "svc", "mode": mode, "source": "archive"}
	if mode == contract.ModeAttached {
		doc["full_lifecycle_joules_per_token"] = nil
		doc["not_measured"] = []string{"idle_baseline", "startup", "release", "full_lifecycle"}
	}
	out := filepath.Join(dir, id)
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	b, _ = json.Marshal(doc)
	if err := os.WriteFile(filepath.Join(out, "report.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestCompareNeverMixesBases: attached and cold-start runs of one
// run.scenario are two groups; the attached group ranks on steady state
// alone. Reports are given as directories.
func TestCompareNeverMixesBases(t *testing.T) {
	dir := t.TempDir()
	paths := []string{
		writeReport(t, dir, "llama8b-a", "cold1", contract.ModeLifecycle),
		writeReport(t, dir, "llama8b-b", "cold2", contract.ModeLifecycle),
		writeReport(t, dir, "qwen7b-a", "att1", contract.ModeAttached),
		writeReport(t, dir, "qwen7b-b", "att2", contract.ModeAttached),
	}
	set, err := runset.Load(paths, runset.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	runs := set.Runs
	res := Compare(runset.NewSet(runs), Options{})
	if len(res.Groups) != 2 {
		t.Fatalf("%d groups %+v, want 2 (one per mode)", len(res.Groups), res.Groups)
	}
	for _, g := range res.Groups {
		if !strings.HasPrefix(g.Key, "svc [") || !strings.Contains(g.Key, "mode=") {
			t.Errorf("group %q: want run.scenario svc split by mode", g.Key)
		}
		if g.Included != 2 || g.RankSS == nil {
			t.Errorf("group %q: %d included, rank ss %v", g.Key, g.Included, g.RankSS)
		}
		if attached := strings.Contains(g.Key, "mode=attached"); attached != (g.MedianLife == nil) || attached != (g.RankLife == nil) {
			t.Errorf("group %q: median life %v rank life %v", g.Key, g.MedianLife, g.RankLife)
		}
	}
	// Pareto over the mixed set drops the lifecycle basis.
	kept, note := runset.SteadyBasis(runs, runset.ParetoMetrics)
	for _, m := range kept {
		if m.Key == runset.LifecycleJPT.Key || m.Key == runset.StartupEnergy.Key {
			t.Errorf("%s kept with attached runs", m.Key)
		}
	}
	if !strings.Contains(note, "att1, att2") {
		t.Errorf("note %q", note)
	}
	if kept, note := runset.SteadyBasis(runs[:2], runset.ParetoMetrics); len(kept) != len(runset.ParetoMetrics) || note != "" {
		t.Errorf("cold-start runs alone: %d metrics, note %q", len(kept), note)
	}
}

// TestResolveReport: a report file, a report directory, a run archive
// (report/ inside) and a run id all name a report; anything else says
// where it looked.
func TestResolveReport(t *testing.T) {
	dir := t.TempDir()
	rd := writeReport(t, dir, "llama8b-a", "r1", contract.ModeLifecycle)
	arch := filepath.Join(dir, "runs", "r2")
	if err := os.MkdirAll(filepath.Join(arch, "report"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(rd, "report.json"), filepath.Join(arch, "report", "report.json")); err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(arch, "report", "report.json")
	for _, arg := range []string{want, arch, filepath.Join(arch, "report")} {
		if got, err := runset.ResolveReport(arg, ""); err != nil || got != want {
			t.Errorf("%s: %q %v, want %q", arg, got, err, want)
		}
	}
	if got, err := runset.ResolveReport("r2", filepath.Join(dir, "runs")); err != nil || got != want {
		t.Errorf("run id: %q %v", got, err)
	}
	if _, err := runset.ResolveReport("nope", filepath.Join(dir, "runs")); err == nil || !strings.Contains(err.Error(), "tried") {
		t.Errorf("unknown run id: %v", err)
	}
}
