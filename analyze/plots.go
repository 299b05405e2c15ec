package analyze

import (
	"github.com/joulemark/joulemark/internal/stats"

	"fmt"
	"image/color"
	"math"
	"slices"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/joulemark/joulemark/internal/svgplot"
)

// plotWidth is every figure's width.
const plotWidth = 24 * vg.Centimeter

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

// runStart is the time the x axes count from: the first phase start, else
// the first power sample.
func runStart(pd *PlotData) (float64, error) {
	t0 := math.Inf(1)
	for _, ph := range pd.Phases {
		t0 = min(t0, ph.Start)
	}
	for _, s := range pd.Power {
		if len(s.T) > 0 && math.IsInf(t0, 1) {
			t0 = s.T[0]
		}
	}
	if math.IsInf(t0, 1) {
		return 0, fmt.Errorf("no phases and no power samples to plot")
	}
	return t0, nil
}

// powerGrid resamples every GPU's power onto the longest series' times
// (linear interpolation; 0 outside a series' range is left out): per grid
// point the total, the minimum and the maximum over the GPUs that have a
// value there. Times are relative to t0.
func powerGrid(pd *PlotData, t0 float64) (t, total, lo, hi []float64) {
	var ref []float64
	for _, s := range pd.Power {
		if len(s.T) > len(ref) {
			ref = s.T
		}
	}
	for _, x := range ref {
		sum, mn, mx, n := 0.0, math.Inf(1), math.Inf(-1), 0
		for _, s := range pd.Power {
			v, ok := interpAt(s.T, s.W, x)
			if !ok {
				continue
			}
			sum += v
			mn, mx = min(mn, v), max(mx, v)
			n++
		}
		if n == 0 {
			continue
		}
		t = append(t, x-t0)
		total, lo, hi = append(total, sum), append(lo, mn), append(hi, mx)
	}
	return t, total, lo, hi
}

// interpAt is y at x, linear between the samples around it; false outside
// [xs[0], xs[last]].
func interpAt(xs, ys []float64, x float64) (float64, bool) {
	n := len(xs)
	if n == 0 || x < xs[0] || x > xs[n-1] {
		return 0, false
	}
	k, found := slices.BinarySearch(xs, x)
	if found {
		return ys[k], true
	}
	f := (x - xs[k-1]) / (xs[k] - xs[k-1])
	return ys[k-1] + (ys[k]-ys[k-1])*f, true
}

// phaseBands adds each phase as a shaded band from 0 to ymax with its name
// at the top, names placed in lanes so that none overprints another: a
// name goes to the first lane whose previous name ends before it starts
// (width estimated from its length at the figure's scale).
func phaseBands(p *plot.Plot, phases []PhaseBand, t0, xmax, ymax float64, width vg.Length) error {
	const charPt = 5.2 // average glyph width of the default 10 pt font, in points
	for _, ph := range phases {
		bd, err := band(ph.Start-t0, ph.End-t0, 0, ymax, phaseColors[ph.Name])
		if err != nil {
			return err
		}
		p.Add(bd)
	}
	// names after every band, so no band paints over a name
	var laneEnd []float64
	for _, ph := range phases {
		x := ph.Start - t0
		w := float64(len(ph.Name))*charPt/float64(width.Points()*0.85)*xmax + 0.01*xmax
		lane := 0
		for lane < len(laneEnd) && laneEnd[lane] > x {
			lane++
		}
		if lane == len(laneEnd) {
			laneEnd = append(laneEnd, 0)
		}
		laneEnd[lane] = x + w
		lb, err := plotter.NewLabels(plotter.XYLabels{XYs: plotter.XYs{{X: x, Y: ymax}}, Labels: []string{ph.Name}})
		if err != nil {
			return err
		}
		lb.Offset = vg.Point{X: 2, Y: vg.Length(-12 - 11*lane)}
		p.Add(lb)
	}
	return nil
}

// powerFigure is a power-over-time plot being drawn: the GPUs' power on
// one time grid (powerGrid, seconds since the run started) and the extent
// of the axes.
type powerFigure struct {
	p                *plot.Plot
	t, total, lo, hi []float64
	xmax, ymax       float64
}

// newPowerFigure starts a power-over-time plot titled title with the phase
// bands behind, its y axis reaching 25 % above the peak of the series peak
// picks from the grid (total or hi).
func newPowerFigure(pd *PlotData, width vg.Length, title string, peak func(f *powerFigure) []float64) (*powerFigure, error) {
	t0, err := runStart(pd)
	if err != nil {
		return nil, err
	}
	f := &powerFigure{}
	f.t, f.total, f.lo, f.hi = powerGrid(pd, t0)
	if len(f.t) == 0 {
		return nil, fmt.Errorf("no power samples to plot")
	}
	f.p = plot.New()
	f.p.Title.Text = title
	f.p.X.Label.Text = "seconds since the run started"
	f.p.Y.Label.Text = "W"
	f.ymax = max(slices.Max(peak(f))*1.25, 1) // headroom for the phase names
	f.xmax = max(f.t[len(f.t)-1], 1)
	for _, ph := range pd.Phases {
		f.xmax = max(f.xmax, ph.End-t0)
	}
	if err := phaseBands(f.p, pd.Phases, t0, f.xmax, f.ymax, width); err != nil {
		return nil, err
	}
	return f, nil
}

// line draws y over the grid's times, reduced to maxPlotPoints.
func (f *powerFigure) line(y []float64, c color.Color, width vg.Length) error {
	x, y := reduce(f.t, y, maxPlotPoints)
	ln, err := plotter.NewLine(xys(x, y))
	if err != nil {
		return err
	}
	ln.Color = c
	ln.Width = width
	f.p.Add(ln)
	return nil
}

// done fixes the axes to [0, xmax] × [0, ymax] and returns the plot.
func (f *powerFigure) done() *plot.Plot {
	f.p.Y.Min, f.p.Y.Max = 0, f.ymax
	f.p.X.Min, f.p.X.Max = 0, f.xmax
	f.p.Y.Tick.Marker = cleanTicks{}
	f.p.X.Tick.Marker = cleanTicks{}
	return f.p
}

// totalPowerPlot: the sum of every GPU's power across the run, phase bands
// behind; what the run cost at a glance.
func totalPowerPlot(pd *PlotData, width vg.Length) (*plot.Plot, error) {
	title := fmt.Sprintf("Total GPU power (%d GPUs)", len(pd.Power))
	f, err := newPowerFigure(pd, width, title, func(f *powerFigure) []float64 { return f.total })
	if err != nil {
		return nil, err
	}
	if err := f.line(f.total, color.NRGBA{R: 0x1f, G: 0x3b, B: 0x73, A: 0xff}, vg.Points(1.6)); err != nil {
		return nil, err
	}
	return f.done(), nil
}

// gpuBandPlot: every GPU at once as the band between the lowest and the
// highest GPU at each instant, with the mean GPU as a line; a GPU that
// strays widens the band instead of hiding under seven others.
func gpuBandPlot(pd *PlotData, width vg.Length) (*plot.Plot, error) {
	const title = "Power per GPU: min–max band over the GPUs, mean line"
	f, err := newPowerFigure(pd, width, title, func(f *powerFigure) []float64 { return f.hi })
	if err != nil {
		return nil, err
	}
	xl, yl := reduce(f.t, f.lo, maxPlotPoints)
	_, yh := reduce(f.t, f.hi, maxPlotPoints)
	poly := make(plotter.XYs, 0, 2*len(xl))
	for i := range xl {
		poly = append(poly, plotter.XY{X: xl[i], Y: yh[i]})
	}
	for i := len(xl) - 1; i >= 0; i-- {
		poly = append(poly, plotter.XY{X: xl[i], Y: yl[i]})
	}
	bd, err := plotter.NewPolygon(poly)
	if err != nil {
		return nil, err
	}
	bd.Color = color.NRGBA{R: 0xe0, G: 0x6c, B: 0x00, A: 0x60}
	bd.LineStyle.Width = 0
	f.p.Add(bd)
	n := float64(len(pd.Power))
	mean := make([]float64, len(f.total))
	for i := range f.total {
		mean[i] = f.total[i] / n
	}
	if err := f.line(mean, color.NRGBA{R: 0x8a, G: 0x3b, B: 0x00, A: 0xff}, vg.Points(1.2)); err != nil {
		return nil, err
	}
	// no legend: the title names the band and the line
	return f.done(), nil
}

// steadyEnd is the index of the steady state's last request in
// pd.JoulesPerToken.
func steadyEnd(pd *PlotData) int {
	return min(max(pd.SteadyLast, pd.SteadyFirst), len(pd.JoulesPerToken)-1)
}

// jptPlot: per-request J/token in completion order, steady state shaded and
// its J/token level drawn as a line; the legend goes below the plot
// (svgplot.Inline).
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
	lo, hi := stats.Percentile(sorted, 1), stats.Percentile(sorted, 99)
	if !math.IsNaN(pd.SteadyJoulesPerToken) {
		lo, hi = min(lo, pd.SteadyJoulesPerToken), max(hi, pd.SteadyJoulesPerToken)
	}
	pad := (hi - lo) * 0.2
	if pad == 0 {
		pad = math.Max(math.Abs(hi)*0.1, 1e-9)
	}
	ymin, ymax := math.Max(0, lo-pad), hi+pad
	if pd.SteadyFirst >= 0 {
		// the band ends where the steady state ends, not at the last request
		bd, err := band(float64(pd.SteadyFirst), float64(steadyEnd(pd)), ymin, ymax, color.NRGBA{R: 0x66, G: 0xbb, B: 0x6a, A: 0x50})
		if err != nil {
			return nil, err
		}
		p.Add(bd)
		p.Legend.Add("steady-state window", bd)
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
	if !math.IsNaN(pd.SteadyJoulesPerToken) && pd.SteadyFirst >= 0 {
		lv, err := plotter.NewLine(plotter.XYs{{X: float64(pd.SteadyFirst), Y: pd.SteadyJoulesPerToken}, {X: float64(max(steadyEnd(pd), pd.SteadyFirst+1)), Y: pd.SteadyJoulesPerToken}})
		if err != nil {
			return nil, err
		}
		lv.Color = color.NRGBA{R: 0xc6, G: 0x28, B: 0x28, A: 0xff}
		lv.Width = vg.Points(1.8)
		p.Add(lv)
		p.Legend.Add(fmt.Sprintf("steady-state J/token %s", trimFloat(pd.SteadyJoulesPerToken, 4)), lv)
	}
	p.Y.Min, p.Y.Max = ymin, ymax
	p.X.Min, p.X.Max = 0, float64(max(n-1, 1))
	p.X.Tick.Marker = integerTicks{}
	p.Y.Tick.Marker = cleanTicks{}
	return p, nil
}

// cleanTicks labels the default tick positions with as few decimals as
// they need: "500", not "500.00"; "0.25", not "0.250".
type cleanTicks struct{}

func (cleanTicks) Ticks(lo, hi float64) []plot.Tick {
	ts := plot.DefaultTicks{}.Ticks(lo, hi)
	for i := range ts {
		if ts[i].Label != "" {
			ts[i].Label = trimFloat(ts[i].Value, 6)
		}
	}
	return ts
}

// trimFloat formats v with at most prec significant digits and no trailing
// zeros.
func trimFloat(v float64, prec int) string {
	return strconv.FormatFloat(v, 'g', prec, 64)
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

// histPlot: distribution of v (seconds) in milliseconds, with the SLO
// (seconds, 0 for none) as a labelled vertical line.
func histPlot(title string, v []float64, slo float64) (*plot.Plot, error) {
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
	p.X.Tick.Marker = cleanTicks{}
	p.Y.Tick.Marker = cleanTicks{}
	if slo > 0 {
		ymax := 0.0
		for _, b := range h.Bins {
			ymax = max(ymax, b.Weight)
		}
		ymax *= 1.15
		x := slo * 1000
		ln, err := plotter.NewLine(plotter.XYs{{X: x, Y: 0}, {X: x, Y: ymax}})
		if err != nil {
			return nil, err
		}
		ln.Color = color.NRGBA{R: 0xc6, G: 0x28, B: 0x28, A: 0xff}
		ln.Width = vg.Points(1.6)
		ln.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
		p.Add(ln)
		lb, err := plotter.NewLabels(plotter.XYLabels{XYs: plotter.XYs{{X: x, Y: ymax}}, Labels: []string{fmt.Sprintf("SLO %s ms", trimFloat(x, 4))}})
		if err != nil {
			return nil, err
		}
		lb.TextStyle[0].XAlign = draw.XRight
		lb.TextStyle[0].Color = ln.Color
		lb.Offset = vg.Point{X: -10, Y: -10}
		p.Add(lb)
		p.Y.Max = ymax
		// keep the SLO in view when every request is far below it
		lo, hi := h.Bins[0].Min, h.Bins[len(h.Bins)-1].Max
		p.X.Min, p.X.Max = min(lo, x)-0.02*(hi-lo), max(hi, x)+0.05*(max(hi, x)-min(lo, x))
	}
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
		{"Total GPU power", func() (*plot.Plot, error) { return totalPowerPlot(pd, plotWidth) }, 9 * vg.Centimeter},
		{"Power per GPU", func() (*plot.Plot, error) { return gpuBandPlot(pd, plotWidth) }, 8 * vg.Centimeter},
		{"Per-request J/token", func() (*plot.Plot, error) { return jptPlot(pd) }, 9 * vg.Centimeter},
		{"TTFT", func() (*plot.Plot, error) { return histPlot("TTFT", pd.TTFT, pd.TTFTSLOSeconds) }, 7 * vg.Centimeter},
		{"TPOT", func() (*plot.Plot, error) { return histPlot("TPOT", pd.TPOT, pd.TPOTSLOSeconds) }, 7 * vg.Centimeter},
	}
	out := make([]Plot, 0, len(figs))
	for _, f := range figs {
		p, err := f.make()
		if err == nil {
			var s string
			s, err = svgplot.Inline(p, plotWidth, f.h)
			if err == nil {
				out = append(out, Plot{Title: f.title, SVG: s})
				continue
			}
		}
		out = append(out, Plot{Title: f.title, Err: err.Error()})
	}
	return out
}
