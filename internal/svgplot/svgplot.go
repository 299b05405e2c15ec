// Package svgplot renders gonum plots as SVG for inlining in HTML pages.
package svgplot

import (
	"bytes"
	"fmt"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// legendPad is the space around the legend strip.
const legendPad = 4 * vg.Millimeter

// legendRowGap is the least space between two legend rows.
const legendRowGap vg.Length = 4

// Inline renders p at w × h as an inline SVG element (no XML prolog). A
// plot with a legend gets it in a strip below the plot (a <g
// class="legend"> beside the <g class="plot-area">), never drawn over the
// data, whatever the browser's fonts. Errors are gonum's own: the pages
// show them as they are.
func Inline(p *plot.Plot, w, h vg.Length) (string, error) {
	leg := p.Legend
	r := leg.Rectangle(draw.Canvas{})
	if lh := r.Max.Y - r.Min.Y; lh <= 0 {
		inner, err := render(p.Draw, w, h)
		if err != nil {
			return "", err
		}
		return wrap(w, h, inner), nil
	}
	// gonum spaces the rows by its own font metrics, while browsers draw
	// the SVG's font size larger in the page's units: room between rows
	// keeps the entries from overlapping each other.
	leg.Padding = max(leg.Padding, legendRowGap)
	r = leg.Rectangle(draw.Canvas{})
	lh := r.Max.Y - r.Min.Y + 2*legendPad
	p.Legend = plot.NewLegend()
	defer func() { p.Legend = leg }()
	area, err := render(p.Draw, w, h)
	if err != nil {
		return "", err
	}
	leg.Top, leg.Left, leg.XOffs, leg.YOffs = true, true, 0, 0
	strip, err := render(func(c draw.Canvas) { leg.Draw(draw.Crop(c, legendPad, 0, legendPad, -legendPad)) }, w, lh)
	if err != nil {
		return "", err
	}
	inner := `<g class="plot-area">` + area + `</g>` + "\n" +
		fmt.Sprintf(`<g class="legend" transform="translate(0, %.2f)">`, h.Points()) + strip + `</g>`
	return wrap(w, h+lh, inner), nil
}

// render draws into a w × h SVG canvas and returns what is inside its
// <svg> element.
func render(drawFn func(draw.Canvas), w, h vg.Length) (string, error) {
	c, err := draw.NewFormattedCanvas(w, h, "svg")
	if err != nil {
		return "", err
	}
	drawFn(draw.New(c))
	var b bytes.Buffer
	if _, err := c.WriteTo(&b); err != nil {
		return "", err
	}
	s := b.String()
	i := strings.Index(s, "<svg")
	if i < 0 {
		return "", fmt.Errorf("svg canvas wrote no <svg> element")
	}
	open := strings.Index(s[i:], ">")
	end := strings.LastIndex(s, "</svg>")
	if open < 0 || end < i+open {
		return "", fmt.Errorf("svg canvas wrote an unterminated <svg> element")
	}
	return s[i+open+1 : end], nil
}

// wrap is the <svg> element around inner, w × h.
func wrap(w, h vg.Length, inner string) string {
	return fmt.Sprintf(`<svg width="%.2fpt" height="%.2fpt" viewBox="0 0 %.2f %.2f" xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink">`,
		w.Points(), h.Points(), w.Points(), h.Points()) + inner + "</svg>\n"
}
