package chromium

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/joulemark/joulemark/internal/testkit/testenv"
)

// recorder is a testing.TB that keeps what Screenshot reports instead of
// failing the real test.
type recorder struct {
	testing.TB
	failed []string
}

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, args ...any) {
	r.failed = append(r.failed, fmt.Sprintf(format, args...))
}

func TestScreenshot(t *testing.T) {
	testenv.SkipIfShort(t, "starts chromium")
	bin := testenv.LookPath(t, "chromium")
	dir := t.TempDir()
	for _, tc := range []struct {
		name, body string
		drawn      bool
	}{
		{"drawn", strings.Repeat("<p>joulemark joulemark joulemark joulemark joulemark</p>\n", 300), true},
		{"blank", "", false},
	} {
		page := filepath.Join(dir, tc.name+".html")
		if err := os.WriteFile(page, []byte("<!DOCTYPE html><html><body style=\"font-size:32px\">"+tc.body+"</body></html>"), 0o644); err != nil {
			t.Fatal(err)
		}
		rec := &recorder{TB: t}
		Screenshot(rec, bin, page, filepath.Join(dir, tc.name+".png"), 800)
		if drawn := len(rec.failed) == 0; drawn != tc.drawn {
			t.Errorf("%s page: drawn %v (%q), want %v", tc.name, drawn, rec.failed, tc.drawn)
		}
	}
}

// TestOverflow: a page wider than the frame overflows by the excess, a
// page that wraps does not.
func TestOverflow(t *testing.T) {
	testenv.SkipIfShort(t, "starts chromium")
	bin := testenv.LookPath(t, "chromium")
	dir := t.TempDir()
	for _, tc := range []struct {
		name, body string
		over       bool
	}{
		{"wide", `<pre class="wide">` + strings.Repeat("x", 400) + `</pre>`, true},
		{"wrapped", "<p>" + strings.Repeat("joulemark ", 400) + "</p>", false},
	} {
		page := filepath.Join(dir, tc.name+".html")
		if err := os.WriteFile(page, []byte("<!DOCTYPE html><html><body>"+tc.body+"</body></html>"), 0o644); err != nil {
			t.Fatal(err)
		}
		over, wide := Overflow(t, bin, page, 1280)
		if (over > 0) != tc.over {
			t.Errorf("%s page: overflow %d px (%s), want overflow %v", tc.name, over, wide, tc.over)
		}
		if tc.over && !strings.Contains(wide, "pre.wide") {
			t.Errorf("%s page: wide elements %q, want pre.wide", tc.name, wide)
		}
	}
}
