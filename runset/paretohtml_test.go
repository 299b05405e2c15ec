package runset

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/joulemark/joulemark/internal/testkit/chromium"
	"github.com/joulemark/joulemark/internal/testkit/testenv"
)

// TestParetoHTML: the page draws the front, labels the dominated runs with
// their rank, draws the invalid run hollow, carries the table with each
// run's load, is never overwritten, and renders at 1280 px in chromium
// without horizontal scrolling.
func TestParetoHTML(t *testing.T) {
	runs := fixtureRuns(t, allRuns...)
	classes := Pareto(runs, ParetoMetrics)
	dir := t.TempDir()
	if keep := os.Getenv("JOULEMARK_SCREENSHOT_DIR"); keep != "" {
		dir = filepath.Join(keep, "pareto")
		_ = os.RemoveAll(dir)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	page := filepath.Join(dir, "pareto.html")
	if err := WriteParetoHTMLFile(page, []ParetoGroup{{Classes: classes}}, ParetoMetrics); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<svg", "sglang-tp1 (rank 2)", "tgi-tp1 (invalid)", "invalid (left out)", "dominated (rank)",
		"<th>load</th>", `<tr class="excluded">`, "dominated by vllm-tp1"} {
		if !bytes.Contains(b, []byte(want)) {
			t.Errorf("pareto.html lacks %q", want)
		}
	}
	if bytes.Contains(b, []byte("<script")) || bytes.Contains(b, []byte(`src="http`)) {
		t.Error("pareto.html loads something from outside")
	}
	if err := WriteParetoHTMLFile(page, []ParetoGroup{{Classes: classes}}, ParetoMetrics); !errors.Is(err, fs.ErrExist) {
		t.Errorf("second write: %v, want it refused (fs.ErrExist)", err)
	}
	var none bytes.Buffer
	if err := WriteParetoHTML(&none, []ParetoGroup{{Name: "empty", Classes: Pareto(fixtureRuns(t, "sglang-tp2")[:0], ParetoMetrics)}}, ParetoMetrics); err != nil || !strings.Contains(none.String(), "Not drawn: no run has both") {
		t.Errorf("a group without figures: %v, page says %q", err, none.String())
	}

	testenv.SkipIfShort(t, "starts chromium")
	bin := testenv.LookPath(t, "chromium")
	chromium.ScreenshotAt(t, bin, page, filepath.Join(dir, "pareto.png"), 1280, 1400)
	if over, wide := chromium.Overflow(t, bin, page, 1280); over > 0 || wide != "" {
		t.Errorf("pareto.html at 1280 px: %d px past the width, sideways scrolling in %q", over, wide)
	}
}
