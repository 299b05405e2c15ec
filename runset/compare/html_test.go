package compare

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/joulemark/joulemark/internal/testkit/chromium"
	"github.com/joulemark/joulemark/internal/testkit/testenv"
	"github.com/joulemark/joulemark/runset"
)

func TestCompareHTML(t *testing.T) {
	runs := load(t, "sweep-c4", "sweep-c12", "sweep-c24", "sweep-c12-qwen")
	// A second concurrency-24 run and a concurrency-32 run, both invalid:
	// hollow markers, never a point, a median or the knee.
	extra := append(load(t, "sweep-c24"), load(t, "sweep-c24")...)
	for i, r := range extra {
		r.Name, r.Report.RunID, r.Report.Valid = []string{"sweep-c24-bad", "sweep-c32-bad"}[i], r.Name, false
		v := []float64{0.9, 0.25}[i]
		r.Report.SteadyState.JoulesPerToken = &v
	}
	extra[1].Report.Run.Concurrency = 32
	res := Compare(runset.NewSet(append(runs, extra...)), Options{})
	sw := res.Sweeps[0]
	if n := len(sw.Points); n != 4 {
		t.Fatalf("%d sweep points, want 4 (c32 shown with no valid run)", n)
	}
	if p := sw.Points[2]; p.SteadyStateJPT == nil || *p.SteadyStateJPT != 0.3 || len(p.Invalid) != 1 {
		t.Errorf("concurrency 24: median %v with %d invalid runs, want the valid run's 0.3 and one invalid run", p.SteadyStateJPT, len(p.Invalid))
	}
	if p := sw.Points[3]; p.Measured() || p.SteadyStateJPT != nil {
		t.Errorf("concurrency 32 has only an invalid run, yet measured %v median %v", p.Measured(), p.SteadyStateJPT)
	}
	if sw.Knee != "concurrency 12" || sw.After != "concurrency 24" {
		t.Errorf("knee %q after %q, want concurrency 12 and 24 (from the valid runs)", sw.Knee, sw.After)
	}
	dir := t.TempDir()
	if keep := os.Getenv("JOULEMARK_SCREENSHOT_DIR"); keep != "" {
		dir = filepath.Join(keep, "compare")
		_ = os.RemoveAll(dir)
	}
	if err := WriteHTMLFile(dir, res); err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(filepath.Join(dir, FileHTML))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Knee at concurrency 12", "queueing: requests queue", "J/token against load", "TTFT p95 against load", "SLO 500 ms", "<svg", "knee",
		"invalid run (left out)", "<td>concurrency 32</td>", `class="excluded"`} {
		if !bytes.Contains(page, []byte(want)) {
			t.Errorf("compare.html lacks %q", want)
		}
	}
	if bytes.Contains(page, []byte("<script")) || bytes.Contains(page, []byte(`src="http`)) {
		t.Error("compare.html loads something from outside")
	}
	// never overwritten
	if err := WriteHTMLFile(dir, res); !errors.Is(err, fs.ErrExist) {
		t.Errorf("second write: %v, want it refused (fs.ErrExist)", err)
	}

	testenv.SkipIfShort(t, "starts chromium")
	bin := testenv.LookPath(t, "chromium")
	pagePath := filepath.Join(dir, FileHTML)
	chromium.ScreenshotAt(t, bin, pagePath, filepath.Join(dir, "compare.png"), 1280, 3200)
	if over, wide := chromium.Overflow(t, bin, pagePath, 1280); over > 0 || wide != "" {
		t.Errorf("compare.html at 1280 px: %d px past the width, sideways scrolling in %q", over, wide)
	}
}
