package analyze

import (
	"bytes"
	"fmt"
	"image/color"
	"math"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// maxPlotPoints bounds the points drawn per series; longer series are
// reduced to bucket means so report.html stays small at any run length.
const maxPlotPoints = 1500

var phaseColors = map[string]color.NRGBA{
	"idle":    {R: 0x9e, G: 0x9e, B: 0x9e, A: 0x40},
	"startup": {R: 0xff, G: 0xa7, B: 0x26, A: 0x40},
	"warmup":  {R: 0xff, G: 0xee, B: 0x58, A: 0x50},
	"formal":  {R: 0x66, G: 0xbb, B: 0x6a, A: 0x30},
	"release": {R: 0x42, G: 0xa5, B: 0xf5, A: 0x40},
}

// reduce returns at most n points: bucket means of x and y.
func reduce(x, y []float64, n int) ([]float64, []float64) {
	if len(x) <= n {
		return x, y
	}
	rx, ry := make([]float64, 0, n), make([]float64, 0, n)
	per := float64(len(x)) / float64(n)
	for b := 0; b < n; b++ {
		lo, hi := int(float64(b)*per), int(float64(b+1)*per)
		hi = min(max(hi, lo+1), len(x))
		sx, sy := 0.0, 0.0
		for i := lo; i < hi; i++ {
			sx += x[i]
			sy += y[i]
		}
		k := float64(hi - lo)
		rx, ry = append(rx, sx/k), append(ry, sy/k)
	}
	return rx, ry
}

func xys(x, y []float64) plotter.XYs {
	p := make(plotter.XYs, len(x))
	for i := range x {
		p[i].X, p[i].Y = x[i], y[i]
	}
	return p
}

// band is a shaded rectangle [x0, x1] × [y0, y1].
func band(x0, x1, y0, y1 float64, c color.Color) (*plotter.Polygon, error) {
	pg, err := plotter.NewPolygon(plotter.XYs{{X: x0, Y: y0}, {X: x1, Y: y0}, {X: x1, Y: y1}, {X: x0, Y: y1}})
	if err != nil {
		return nil, err
	}
	pg.Color = c
	pg.LineStyle.Width = 0
	return pg, nil
}

// svg renders p as an inline SVG element (no XML prolog).
func svg(p *plot.Plot, w, h vg.Length) (string, error) {
	wt, err := p.WriterTo(w, h, "svg")
	if err != nil {
		return "", err
	}
	var b bytes.Buffer
	if _, err := wt.WriteTo(&b); err != nil {
		return "", err
	}
	s := b.String()
	if i := strings.Index(s, "<svg"); i >= 0 {
		s = s[i:]
	}
	return s, nil
}

// legendLabel drops the "instance " prefix of a GPU label when every series
// comes from the same instance: "gpu 3" instead of "127.0.0.1:9402 gpu 3".
func legendLabel(label string, all []PowerSeries) string {
	inst, _, ok := strings.Cut(label, " gpu ")
	if !ok {
		return label
	}
	for _, s := range all {
		if !strings.HasPrefix(s.Label, inst+" gpu ") {
			return label
		}
	}
	return strings.TrimPrefix(label, inst+" ")
}

// powerPlot: power of every GPU across the run, phase bands behind.
func powerPlot(pd *PlotData) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = "GPU power across the run"
	p.X.Label.Text = "seconds since the run started"
	p.Y.Label.Text = "W"
	p.Legend.Top = false // phase names use the top
	// Lift the legend off the bottom edge, where every GPU idles before and
	// after the run, into the right-hand space the release decay leaves.
	p.Legend.YOffs = 2.5 * vg.Centimeter
	t0 := math.Inf(1)
	for _, ph := range pd.Phases {
		t0 = min(t0, ph.Start)
	}
	ymax := 0.0
	for _, s := range pd.Power {
		for _, w := range s.W {
			ymax = max(ymax, w)
		}
		if len(s.T) > 0 && math.IsInf(t0, 1) {
			t0 = s.T[0]
		}
	}
	if math.IsInf(t0, 1) {
		return nil, fmt.Errorf("no phases and no power samples to plot")
	}
	ymax = max(ymax*1.1, 1)
	for i, ph := range pd.Phases {
		bd, err := band(ph.Start-t0, ph.End-t0, 0, ymax, phaseColors[ph.Name])
		if err != nil {
			return nil, err
		}
		p.Add(bd)
		lb, err := plotter.NewLabels(plotter.XYLabels{XYs: plotter.XYs{{X: ph.Start - t0, Y: ymax}}, Labels: []string{ph.Name}})
		if err != nil {
			return nil, err
		}
		// Stagger the names so narrow phases do not overprint.
		lb.Offset = vg.Point{X: 2, Y: vg.Length(-12 - 11*(i%2))}
		p.Add(lb)
	}
	for i, s := range pd.Power {
		if len(s.T) == 0 {
			continue
		}
		rel := make([]float64, len(s.T))
		for k, t := range s.T {
			rel[k] = t - t0
		}
		x, y := reduce(rel, s.W, maxPlotPoints)
		ln, err := plotter.NewLine(xys(x, y))
		if err != nil {
			return nil, err
		}
		ln.Color = plotutil.Color(i)
		ln.Width = vg.Points(1)
		p.Add(ln)
		p.Legend.Add(legendLabel(s.Label, pd.Power), ln)
	}
	p.Y.Min, p.Y.Max = 0, ymax
	return p, nil
}

// jptPlot: per-request J/token in completion order, steady state shaded.
func jptPlot(pd *PlotData) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = "Per-request J/token (successful formal requests, completion order)"
	p.X.Label.Text = "request (completion order)"
	p.Y.Label.Text = "J/token"
	n := len(pd.JoulesPerToken)
	if n == 0 {
		return nil, fmt.Errorf("no per-request J/token to plot")
	}
	sorted := slices.Clone(pd.JoulesPerToken)
	slices.Sort(sorted)
	// Scale to the 1st–99th percentile so a few outliers do not flatten it.
	lo, hi := percentile(sorted, 1), percentile(sorted, 99)
	pad := (hi - lo) * 0.2
	if pad == 0 {
		pad = math.Max(math.Abs(hi)*0.1, 1e-9)
	}
	ymin, ymax := math.Max(0, lo-pad), hi+pad
	if pd.SteadyFirst >= 0 {
		bd, err := band(float64(pd.SteadyFirst), float64(n-1), ymin, ymax, color.NRGBA{R: 0x66, G: 0xbb, B: 0x6a, A: 0x50})
		if err != nil {
			return nil, err
		}
		p.Add(bd)
		p.Legend.Add("steady state", bd)
	}
	idx := make([]float64, n)
	for i := range idx {
		idx[i] = float64(i)
	}
	x, y := reduce(idx, pd.JoulesPerToken, 4*maxPlotPoints)
	sc, err := plotter.NewScatter(xys(x, y))
	if err != nil {
		return nil, err
	}
	sc.GlyphStyle.Radius = vg.Points(1.2)
	sc.GlyphStyle.Shape = draw.CircleGlyph{}
	sc.GlyphStyle.Color = plotutil.Color(0)
	p.Add(sc)
	label := "J/token per request"
	if len(x) < n {
		label = fmt.Sprintf("J/token, means of %d-request buckets", int(math.Ceil(float64(n)/float64(len(x)))))
	}
	p.Legend.Add(label, sc)
	p.Legend.Top = true
	p.Y.Min, p.Y.Max = ymin, ymax
	p.X.Min, p.X.Max = 0, float64(max(n-1, 1))
	p.X.Tick.Marker = integerTicks{}
	return p, nil
}

// integerTicks labels the default tick positions without decimals.
type integerTicks struct{}

func (integerTicks) Ticks(lo, hi float64) []plot.Tick {
	ts := plot.DefaultTicks{}.Ticks(lo, hi)
	for i := range ts {
		if ts[i].Label != "" {
			ts[i].Label = fmt.Sprintf("%.0f", ts[i].Value)
		}
	}
	return ts
}

// histPlot: distribution of v (seconds) in milliseconds.
func histPlot(title string, v []float64) (*plot.Plot, error) {
	if len(v) == 0 {
		return nil, fmt.Errorf("no %s values to plot", title)
	}
	ms := make(plotter.Values, len(v))
	for i, s := range v {
		ms[i] = s * 1000
	}
	h, err := plotter.NewHist(ms, 40)
	if err != nil {
		return nil, err
	}
	h.FillColor = plotutil.Color(1)
	h.LineStyle.Width = vg.Points(0.5)
	p := plot.New()
	p.Title.Text = title + " distribution (successful formal requests)"
	p.X.Label.Text = "ms"
	p.Y.Label.Text = "requests"
	p.Add(h)
	return p, nil
}

// Plot is one rendered figure of report.html.
type Plot struct {
	Title string
	SVG   string // inline <svg> element; empty when Err is set
	Err   string // why the figure could not be drawn
}

// renderPlots draws the report's figures. A figure without data is kept
// with the reason, so the page says what is missing.
func renderPlots(pd *PlotData) []Plot {
	if pd == nil {
		return []Plot{{Title: "Plots", Err: "no plot data"}}
	}
	figs := []struct {
		title string
		make  func() (*plot.Plot, error)
		h     vg.Length
	}{
		{"Power per GPU", func() (*plot.Plot, error) { return powerPlot(pd) }, 9 * vg.Centimeter},
		{"Per-request J/token", func() (*plot.Plot, error) { return jptPlot(pd) }, 9 * vg.Centimeter},
		{"TTFT", func() (*plot.Plot, error) { return histPlot("TTFT", pd.TTFT) }, 7 * vg.Centimeter},
		{"TPOT", func() (*plot.Plot, error) { return histPlot("TPOT", pd.TPOT) }, 7 * vg.Centimeter},
	}
	out := make([]Plot, 0, len(figs))
	for _, f := range figs {
		p, err := f.make()
		if err == nil {
			var s string
			s, err = svg(p, 24*vg.Centimeter, f.h)
			if err == nil {
				out = append(out, Plot{Title: f.title, SVG: s})
				continue
			}
		}
		out = append(out, Plot{Title: f.title, Err: err.Error()})
	}
	return out
}
