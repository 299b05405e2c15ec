// Package chromium checks, for tests, that an HTML page renders in headless
// chromium (find the program with testenv.LookPath).
package chromium

import (
	"context"
	"image/png"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"
)

// Width is the width in pixels of every screenshot.
const Width = 1200

// Screenshot renders the HTML file page in headless chromium (the program
// at bin) to the PNG file shot, Width × height pixels, and fails t unless
// the picture is a drawn page: Width wide, with at least 2000 dark points
// among every 4th pixel each way (text, tables, plot lines).
func Screenshot(t testing.TB, bin, page, shot string, height int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--headless", "--no-sandbox", "--disable-gpu",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run",
		"--user-data-dir="+t.TempDir(), "--screenshot="+shot, "--window-size="+windowSize(height),
		"file://"+page)
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
		t.Fatalf("screenshot %s: %v", shot, err)
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
	if bd.Dx() != Width || dark < 2000 {
		t.Errorf("screenshot %s %v has %d dark sample points; want a %d px wide drawn page", shot, bd, dark, Width)
	}
}

func windowSize(height int) string {
	return strconv.Itoa(Width) + "," + strconv.Itoa(height)
}
