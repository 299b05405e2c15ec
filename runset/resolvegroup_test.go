package runset

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/joulemark/joulemark/report"
)

// writeRun writes r's report at dir/<run_id>/sub/report.json.
func writeRun(t *testing.T, dir, sub string, r *Run) {
	t.Helper()
	b, err := json.Marshal(r.Report)
	if err != nil {
		t.Fatal(err)
	}
	d := filepath.Join(dir, r.Name, sub)
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(d, report.FileJSON), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// A group id names its repetitions' reports, in repetition order, from
// the run archive and analyze's reports/ (a run in both counted once);
// runs of another group sharing the prefix are not among them.
func TestResolveGroup(t *testing.T) {
	t.Chdir(t.TempDir())
	for _, r := range append(reps("g", 0.3, 0.31, 0.32), reps("g-c8", 0.4, 0.41)...) {
		writeRun(t, "runs", "report", r)
	}
	ten := rep("g-rep10", "g", 10, 0.33, 1000, true)
	writeRun(t, "reports", "", ten)
	writeRun(t, "reports", "", reps("g", 0.3)[0]) // g-rep1 again
	writeRun(t, "runs", "report", rep("g-notes", "", 0, 0.3, 1000, true))
	paths, err := ResolveGroup("g", "runs")
	want := []string{"runs/g-rep1/report/report.json", "runs/g-rep2/report/report.json", "runs/g-rep3/report/report.json", "reports/g-rep10/report.json"}
	if err != nil || !slices.Equal(paths, want) {
		t.Errorf("ResolveGroup(g) = %q, %v; want %q", paths, err, want)
	}
	runs, err := loadReports([]string{"g-c8"}, LoadOptions{RunsDir: "runs"})
	if err != nil || len(runs) != 2 || len(NewSet(runs).Pooled()) != 1 {
		t.Errorf("loadReports(g-c8): %d runs, %v", len(runs), err)
	}
	runs, err = loadReports([]string{"g-rep2"}, LoadOptions{RunsDir: "runs"})
	if err != nil || len(runs) != 1 {
		t.Errorf("a run id that has a report is that report: %d runs, %v", len(runs), err)
	}
	if _, err := loadReports([]string{"h"}, LoadOptions{RunsDir: "runs"}); !errors.Is(err, ErrNoReport) {
		t.Errorf("no such run or group: %v", err)
	}
}
