// Package chromium checks, for tests, that an HTML page renders in headless
// chromium (find the program with testenv.LookPath).
package chromium

import (
	"context"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
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
	ScreenshotAt(t, bin, page, shot, Width, height)
}

// ScreenshotAt is Screenshot at width pixels.
func ScreenshotAt(t testing.TB, bin, page, shot string, width, height int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--headless", "--no-sandbox", "--disable-gpu",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run",
		"--user-data-dir="+t.TempDir(), "--screenshot="+shot, "--window-size="+strconv.Itoa(width)+","+strconv.Itoa(height),
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
	if bd.Dx() != width || dark < 2000 {
		t.Errorf("screenshot %s %v has %d dark sample points; want a %d px wide drawn page", shot, bd, dark, width)
	}
}

var overflowOut = regexp.MustCompile(`<pre id="overflow">(-?\d+) (\d+)</pre>`)

// Overflow loads the HTML file page in a frame width pixels wide and
// returns how many pixels its content reaches past the frame's width (0
// when the page needs no horizontal scrolling), and the elements that
// reach past it or scroll sideways inside (tag.class, at most 5; "" when
// none).
func Overflow(t testing.TB, bin, page string, width int) (int, string) {
	t.Helper()
	dir := t.TempDir()
	harness := filepath.Join(dir, "overflow.html")
	src := `<!DOCTYPE html><html><body style="margin:0">
<iframe id="f" src="file://` + page + `" style="border:0;width:` + strconv.Itoa(width) + `px;height:900px"></iframe>
<script>
document.getElementById("f").onload = function () {
  var d = this.contentDocument, w = d.documentElement.clientWidth, wide = [];
  d.querySelectorAll("body *").forEach(function (e) {
    var r = e.getBoundingClientRect();
    if ((r.right > w + 1 || (e.namespaceURI === "http://www.w3.org/1999/xhtml" && e.scrollWidth > e.clientWidth + 1)) && wide.length < 5) wide.push(e.tagName.toLowerCase() + (e.className && e.className.baseVal === undefined ? "." + e.className : ""));
  });
  var o = document.createElement("pre");
  o.id = "overflow";
  o.textContent = (d.documentElement.scrollWidth - w) + " " + w;
  document.body.appendChild(o);
  var l = document.createElement("pre");
  l.id = "wide";
  l.textContent = wide.join(", ");
  document.body.appendChild(l);
};
</script></body></html>`
	out := dumpDOM(t, bin, harness, src)
	m := overflowOut.FindSubmatch(out)
	if m == nil {
		t.Fatalf("chromium measured nothing on %s:\n%.2000s", page, out)
	}
	over, _ := strconv.Atoi(string(m[1]))
	_, wide, _ := strings.Cut(string(out), `<pre id="wide">`)
	wide, _, _ = strings.Cut(wide, "</pre>")
	return max(over, 0), wide
}

var legendOut = regexp.MustCompile(`(?s)<pre id="legends">(.*?)</pre>`)

// Legends loads the HTML file page in a frame width pixels wide and
// returns, for each inline SVG plot with a legend (svgplot.Inline's <g
// class="legend">), one line: "ok N: <legend text>" when its legend lies
// below its plot area and inside the picture, else "overlap N: …" or
// "clipped N: …" with the rectangles.
func Legends(t testing.TB, bin, page string, width int) []string {
	t.Helper()
	src := `<!DOCTYPE html><html><body style="margin:0">
<iframe id="f" src="file://` + page + `" style="border:0;width:` + strconv.Itoa(width) + `px;height:900px"></iframe>
<script>
document.getElementById("f").onload = function () {
  var d = this.contentDocument, out = [];
  d.querySelectorAll("svg").forEach(function (svg, i) {
    var leg = svg.querySelector("g.legend"), area = svg.querySelector("g.plot-area");
    if (!leg) return;
    var l = leg.getBoundingClientRect(), a = area ? area.getBoundingClientRect() : null, s = svg.getBoundingClientRect();
    var r = function (x) { return "[" + [x.left, x.top, x.right, x.bottom].map(Math.round).join(",") + "]"; };
    var what = "ok";
    if (!a || (l.left < a.right && a.left < l.right && l.top < a.bottom && a.top < l.bottom)) what = "overlap";
    else if (l.right > s.right + 1 || l.bottom > s.bottom + 1 || l.width == 0) what = "clipped";
    out.push(what + " " + i + ": " + leg.textContent.replace(/\s+/g, " ").trim() + " legend " + r(l) + (a ? " plot " + r(a) : " no plot area") + " svg " + r(s));
  });
  var o = document.createElement("pre");
  o.id = "legends";
  o.textContent = out.join("\n");
  document.body.appendChild(o);
};
</script></body></html>`
	out := dumpDOM(t, bin, filepath.Join(t.TempDir(), "legends.html"), src)
	m := legendOut.FindSubmatch(out)
	if m == nil {
		t.Fatalf("chromium measured nothing on %s:\n%.2000s", page, out)
	}
	if strings.TrimSpace(string(m[1])) == "" {
		return nil
	}
	return strings.Split(strings.TrimSpace(string(m[1])), "\n")
}

// dumpDOM writes the measuring page src to harness, loads it in headless
// chromium and returns the DOM it leaves.
func dumpDOM(t testing.TB, bin, harness, src string) []byte {
	t.Helper()
	if err := os.WriteFile(harness, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--headless", "--no-sandbox", "--disable-gpu", "--allow-file-access-from-files",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run",
		"--user-data-dir="+t.TempDir(), "--virtual-time-budget=10000", "--dump-dom", "file://"+harness)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium: %v", err)
	}
	return out
}
