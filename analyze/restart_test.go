package analyze

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/joulemark/joulemark/phaseapi"
	"github.com/joulemark/joulemark/runarchive"
)

// TestExporterGapsFlagged: a gap in an exporter's final status (it
// restarted mid-run) becomes a non-excluding exporter_restarted flag with
// its interval, and a measurement gap.
func TestExporterGapsFlagged(t *testing.T) {
	run, err := runarchive.Create(t.TempDir(), "gap-1")
	if err != nil {
		t.Fatal(err)
	}
	r, _, err := Compute(fixture(), fixtureParams())
	if err != nil {
		t.Fatal(err)
	}
	if err := addExporterGaps(r, run); err != nil || slices.Contains(flagCodes(r), FlagExporterRestarted) {
		t.Fatalf("without phases.json: flags %v, %v", flagCodes(r), err)
	}
	doc := map[string]any{"run_id": "gap-1", "exporters": []any{
		map[string]any{"url": "http://node-a:9402", "status": phaseapi.RunStatus{RunID: "gap-1",
			Gaps: []phaseapi.Gap{{Start: fixtureBase + 40, End: fixtureBase + 47.5, Reason: phaseapi.GapExporterRestarted}}}},
		map[string]any{"url": "http://node-b:9402", "status": phaseapi.RunStatus{RunID: "gap-1"}},
	}}
	b, _ := json.Marshal(doc)
	if err := os.WriteFile(run.Path(runarchive.PhasesFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
	valid := r.Valid
	if err := addExporterGaps(r, run); err != nil {
		t.Fatal(err)
	}
	var msg string
	for _, f := range r.Flags {
		if f.Code == FlagExporterRestarted {
			msg = f.Message
			if f.Excluding {
				t.Error("exporter_restarted excludes the run; coverage decides that")
			}
		}
	}
	if !strings.Contains(msg, "http://node-a:9402") || !strings.Contains(msg, "7.5 s") || r.Valid != valid {
		t.Errorf("flag message %q (valid %v→%v), want node-a's 7.5 s gap", msg, valid, r.Valid)
	}
	last := r.Measurement.Gaps[len(r.Measurement.Gaps)-1]
	if last.Series != "exporter" || last.Start != fixtureBase+40 || last.End != fixtureBase+47.5 {
		t.Errorf("measurement gap %+v", last)
	}
}
