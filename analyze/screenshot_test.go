package analyze

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/joulemark/joulemark/internal/testkit/chromium"
	"github.com/joulemark/joulemark/internal/testkit/testenv"
	"github.com/joulemark/joulemark/report"
)

// TestHTMLInChromium renders report.html in headless chromium and checks the
// screenshot is a drawn page. Set JOULEMARK_SCREENSHOT_DIR to keep the
// report and the screenshot for a look.
func TestHTMLInChromium(t *testing.T) {
	testenv.SkipIfShort(t, "starts chromium")
	bin := testenv.LookPath(t, "chromium")
	for _, tc := range []struct {
		name  string
		valid bool
	}{{"valid", true}, {"invalid", false}} {
		t.Run(tc.name, func(t *testing.T) {
			d := synthRun(3000, 2, 600, 2)
			if !tc.valid {
				d.ReleaseClosed = new(false)
			}
			r, pd, err := computeSeries(d, DefaultParams())
			if err != nil {
				t.Fatal(err)
			}
			if !r.SteadyState.Reached || r.Valid != tc.valid {
				t.Fatalf("synthetic run: steady state %v (%s), valid %v; want reached, valid %v", r.SteadyState.Reached, r.SteadyState.Reason, r.Valid, tc.valid)
			}
			screenshot(t, bin, tc.name, r, pd)
		})
	}
}

// screenshot writes the report, renders it in chromium and checks the
// picture is a drawn page.
func screenshot(t *testing.T, bin, name string, r *report.Report, pd *PlotData) {
	base := t.TempDir()
	if keep := os.Getenv("JOULEMARK_SCREENSHOT_DIR"); keep != "" {
		base = keep
	}
	dir := filepath.Join(base, name)
	_ = os.RemoveAll(dir)
	if err := WriteReport(dir, r, pd); err != nil {
		t.Fatal(err)
	}
	shot := filepath.Join(base, name+".png")
	_ = os.Remove(shot)
	chromium.Screenshot(t, bin, filepath.Join(dir, report.FileHTML), shot, 6400)
	checkLegends(t, bin, filepath.Join(dir, report.FileHTML), "J/token per request")
}

// checkLegends: at 1280 px no legend of page overlaps its plot or runs off
// its picture, and the plot whose legend names want has one.
func checkLegends(t *testing.T, bin, page, want string) {
	t.Helper()
	found := false
	for _, l := range chromium.Legends(t, bin, page, 1280) {
		if !strings.HasPrefix(l, "ok ") {
			t.Errorf("%s at 1280 px: %s", page, l)
		}
		found = found || strings.Contains(l, want)
	}
	if !found {
		t.Errorf("%s: no plot has a legend below it naming %q", page, want)
	}
}
