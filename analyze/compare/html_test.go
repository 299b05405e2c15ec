package compare

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/joulemark/joulemark/internal/chromium"
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
	bin := testenv.LookPath(t, "chromium")
	chromium.Screenshot(t, bin, filepath.Join(dir, FileHTML), filepath.Join(dir, "compare.png"), 2600)
}
