package compare

import (
	"bytes"
	"context"
	"errors"
	"image/png"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/joulemark/joulemark/internal/testenv"
)

func TestCompareHTML(t *testing.T) {
	res := Compare(load(t, "sweep-c4", "sweep-c12", "sweep-c24", "sweep-c12-qwen"), Options{})
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
	for _, want := range []string{"Knee at concurrency 12", "queueing: requests queue", "J/token against load", "TTFT p95 against load", "SLO 500 ms", "<svg", "knee"} {
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
	chromium := testenv.LookPath(t, "chromium")
	shot := filepath.Join(dir, "compare.png")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, chromium, "--headless", "--no-sandbox", "--disable-gpu",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run",
		"--user-data-dir="+t.TempDir(), "--screenshot="+shot, "--window-size=1200,2600",
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
		t.Errorf("screenshot %v has %d dark sample points; want a drawn page", bd, dark)
	}
}
