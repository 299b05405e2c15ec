package analyze

import (
	"context"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/joulemark/joulemark/internal/testenv"
)

// TestHTMLInChromium renders report.html in headless chromium and checks the
// screenshot is a drawn page. Set JOULEMARK_SCREENSHOT_DIR to keep the
// report and the screenshot for a look.
func TestHTMLInChromium(t *testing.T) {
	testenv.SkipIfShort(t, "starts chromium")
	chromium := testenv.LookPath(t, "chromium")
	for _, tc := range []struct {
		name  string
		valid bool
	}{{"valid", true}, {"invalid", false}} {
		t.Run(tc.name, func(t *testing.T) {
			d := synthRun(3000, 2, 600, 2)
			if !tc.valid {
				d.ReleaseClosed = new(false)
			}
			r, pd, err := Compute(d, DefaultParams())
			if err != nil {
				t.Fatal(err)
			}
			if !r.SteadyState.Reached || r.Valid != tc.valid {
				t.Fatalf("synthetic run: steady state %v (%s), valid %v; want reached, valid %v", r.SteadyState.Reached, r.SteadyState.Reason, r.Valid, tc.valid)
			}
			screenshot(t, chromium, tc.name, r, pd)
		})
	}
}

// screenshot writes the report, renders it in chromium and checks the
// picture is a drawn page.
func screenshot(t *testing.T, chromium, name string, r *Report, pd *PlotData) {
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
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, chromium, "--headless", "--no-sandbox", "--disable-gpu",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run",
		"--user-data-dir="+t.TempDir(), "--screenshot="+shot, "--window-size=1200,6400",
		"file://"+filepath.Join(dir, FileHTML))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("chromium: %v\n%s", err, out)
	}
	f, err := os.Open(shot)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	// A drawn page has many non-white pixels (text, tables, plot lines).
	bd, dark := img.Bounds(), 0
	for y := bd.Min.Y; y < bd.Max.Y; y += 4 {
		for x := bd.Min.X; x < bd.Max.X; x += 4 {
			r, g, b, _ := img.At(x, y).RGBA()
			if r+g+b < 3*0xC000 {
				dark++
			}
		}
	}
	if bd.Dx() != 1200 || dark < 2000 {
		t.Errorf("screenshot %v has %d dark sample points; want a 1200 px wide drawn page", bd, dark)
	}
}
