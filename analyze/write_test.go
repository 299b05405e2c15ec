package analyze

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWriteReport(t *testing.T) {
	r, pd := fixtureReport(t)
	dir := filepath.Join(t.TempDir(), "out", "run1")
	if err := WriteReport(dir, r, pd); err != nil {
		t.Fatal(err)
	}
	js, err := os.ReadFile(filepath.Join(dir, FileJSON))
	if err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(js, &back); err != nil || back.RunID != r.RunID {
		t.Fatalf("report.json does not read back: %v (%q)", err, back.RunID)
	}
	html, err := os.ReadFile(filepath.Join(dir, FileHTML))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<svg", "Total GPU power", "min–max band", "steady-state J/token", "SLO 500 ms", "TTFT distribution", "TPOT distribution", "<table>"} {
		if !bytes.Contains(html, []byte(want)) {
			t.Errorf("report.html lacks %q", want)
		}
	}
	if bytes.Contains(html, []byte("<script")) || bytes.Contains(html, []byte(`src="http`)) || bytes.Contains(html, []byte(`href="http`)) {
		t.Error("report.html loads something from outside")
	}
	if _, err := os.Stat(filepath.Join(dir, FileMarkdown)); err != nil {
		t.Error(err)
	}

	// A second report into the same directory is refused, and the first
	// one is untouched.
	r2 := *r
	r2.RunID = "other"
	err = WriteReport(dir, &r2, pd)
	if !errors.Is(err, ErrReportExists) {
		t.Fatalf("second write: err = %v, want ErrReportExists", err)
	}
	js2, _ := os.ReadFile(filepath.Join(dir, FileJSON))
	if !bytes.Equal(js, js2) {
		t.Error("the earlier report.json changed")
	}
	// No temporary directory is left behind.
	entries, _ := os.ReadDir(filepath.Dir(dir))
	if len(entries) != 1 {
		t.Errorf("%d entries beside the report, want 1", len(entries))
	}

	// An existing empty directory is used.
	empty := filepath.Join(t.TempDir(), "empty")
	if err := os.Mkdir(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := WriteReport(empty, r, nil); err != nil {
		t.Fatalf("writing into an empty directory: %v", err)
	}
}

func TestWriteSummary(t *testing.T) {
	r, _ := fixtureReport(t)
	var b bytes.Buffer
	if err := WriteSummary(&b, r); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"fixture-1", "steady-state J/token", "10.0000", "full-lifecycle J/token", "13.0000", "error rate"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, b.String())
		}
	}
}
