package svgplot

import (
	"strings"
	"testing"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
)

func TestInlineDropsProlog(t *testing.T) {
	p := plot.New()
	p.Title.Text = "t"
	s, err := Inline(p, 4*vg.Centimeter, 3*vg.Centimeter)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(s, "<svg") || !strings.HasSuffix(strings.TrimSpace(s), "</svg>") {
		t.Errorf("Inline = %.60q…, want a bare <svg> element", s)
	}
}
