package analyze

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/joulemark/joulemark/report"
)

// TestDocDemoSummary: docs/analyze.md's worked example ("How sure, and what
// it costs") shows the summary line analyze prints for the demo run whose
// report.json is testdata/demo.report.json: a change to the summary's
// format or to the intervals it shows fails here until the doc shows it
// (rerun the demo as the doc says, copy its report.json and paste its
// summary).
func TestDocDemoSummary(t *testing.T) {
	b, err := os.ReadFile("testdata/demo.report.json")
	if err != nil {
		t.Fatal(err)
	}
	var r report.Report
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	var got bytes.Buffer
	if err := WriteSummary(&got, &r); err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile("../docs/analyze.md")
	if err != nil {
		t.Fatal(err)
	}
	const marker = "Worked example: the demo ("
	_, after, ok := strings.Cut(string(doc), marker)
	if !ok {
		t.Fatalf("docs/analyze.md has no %q", marker)
	}
	_, block, ok := strings.Cut(after, "```\n")
	block, _, ok2 := strings.Cut(block, "```")
	if !ok || !ok2 {
		t.Fatalf("docs/analyze.md: no code block after %q", marker)
	}
	if !strings.Contains(block, r.RunID) || !strings.Contains(after[:strings.Index(after, "```")], r.RunID) {
		t.Errorf("docs/analyze.md's worked example does not name run %s", r.RunID)
	}
	if block != got.String() {
		t.Errorf("docs/analyze.md's demo summary differs from WriteSummary of testdata/demo.report.json:\n--- doc\n%s--- WriteSummary\n%s", block, got.String())
	}
}
