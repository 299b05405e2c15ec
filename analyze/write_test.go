package analyze

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/joulemark/joulemark/report"
)

func TestWriteReport(t *testing.T) {
	r, pd := fixtureReport(t)
	dir := filepath.Join(t.TempDir(), "out", "run1")
	if err := WriteReport(dir, r, pd); err != nil {
		t.Fatal(err)
	}
	js, err := os.ReadFile(filepath.Join(dir, report.FileJSON))
	if err != nil {
		t.Fatal(err)
	}
	var back report.Report
	if err := json.Unmarshal(js, &back); err != nil || back.RunID != r.RunID {
		t.Fatalf("report.json does not read back: %v (%q)", err, back.RunID)
	}
	html, err := os.ReadFile(filepath.Join(dir, report.FileHTML))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<svg", "Total GPU power", "min–max band", "steady-state J/token", "SLO 500 ms", "TTFT distribution", "TPOT distribution", "<table>"} {
		if !bytes.Contains(html, []byte(want)) {
			t.Errorf("report.html lacks %q", want)
		}
	}
	// The headline figures and their intervals lead the page: they come
	// before the first plot, the stage table after the plots.
	svg, head, ci, stages := bytes.Index(html, []byte("<svg")), bytes.Index(html, []byte("steady-state J/token")), bytes.Index(html, []byte("95% CI")), bytes.Index(html, []byte("Stage energy"))
	if head < 0 || ci < 0 || svg < 0 || head > svg || ci > svg || stages < svg {
		t.Errorf("report.html: headline at %d, its intervals at %d, first plot at %d, stage table at %d; want headline and intervals before the plots", head, ci, svg, stages)
	}
	if bytes.Contains(html, []byte("<script")) || bytes.Contains(html, []byte(`src="http`)) || bytes.Contains(html, []byte(`href="http`)) {
		t.Error("report.html loads something from outside")
	}
	if _, err := os.Stat(filepath.Join(dir, report.FileMarkdown)); err != nil {
		t.Error(err)
	}

	// A second report into the same directory is refused, and the first
	// one is untouched.
	r2 := *r
	r2.RunID = "other"
	err = WriteReport(dir, &r2, pd)
	if !errors.Is(err, report.ErrExists) {
		t.Fatalf("second write: err = %v, want ErrExists", err)
	}
	js2, _ := os.ReadFile(filepath.Join(dir, report.FileJSON))
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

// Re-analysing into a run's default directory keeps every earlier report
// (dir.1, dir.2, …) and puts the newest at dir; nothing is overwritten and
// no temporary directory is left behind.
func TestWriteReportKeepingEarlier(t *testing.T) {
	r, pd := fixtureReport(t)
	dir := filepath.Join(t.TempDir(), "run1", "report")
	var ids []string
	for i, id := range []string{"first", "second", "third"} {
		ri := *r
		ri.RunID = id
		ids = append(ids, id)
		kept, err := writeReport(dir, true, &ri, pd)
		if err != nil {
			t.Fatalf("write %d: %v", i+1, err)
		}
		if want := map[int]string{0: "", 1: dir + ".1", 2: dir + ".2"}[i]; kept != want {
			t.Errorf("write %d kept the earlier report at %q, want %q", i+1, kept, want)
		}
	}
	for i, d := range []string{dir + ".1", dir + ".2", dir} {
		js, err := os.ReadFile(filepath.Join(d, report.FileJSON))
		var back report.Report
		if err != nil || json.Unmarshal(js, &back) != nil || back.RunID != ids[i] {
			t.Errorf("%s: run %q (%v), want %q", d, back.RunID, err, ids[i])
		}
	}
	if entries, _ := os.ReadDir(filepath.Dir(dir)); len(entries) != 3 {
		t.Errorf("%d entries beside the report, want 3", len(entries))
	}
	// A file where the directory should be is an error, not lost.
	file := filepath.Join(t.TempDir(), "report")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := writeReport(file, true, r, pd); err == nil {
		t.Error("a file in place of the report directory: no error")
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
