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
	r, pd, err := Compute(synthRun(3000, 2, 600, 2), DefaultParams())
	if err != nil {
		t.Fatal(err)
	}
	if !r.SteadyState.Reached {
		t.Fatalf("synthetic run did not reach steady state: %s", r.SteadyState.Reason)
	}
	base := t.TempDir()
	if keep := os.Getenv("JOULEMARK_SCREENSHOT_DIR"); keep != "" {
		base = keep
	}
	dir := filepath.Join(base, "report")
	_ = os.RemoveAll(dir)
	if err := WriteReport(dir, r, pd); err != nil {
		t.Fatal(err)
	}
	shot := filepath.Join(base, "report.png")
	_ = os.Remove(shot)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, chromium, "--headless", "--no-sandbox", "--disable-gpu",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run",
		"--user-data-dir="+t.TempDir(), "--screenshot="+shot, "--window-size=1200,2400",
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
