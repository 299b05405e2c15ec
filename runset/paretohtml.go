package runset

import (
	"bytes"
	"fmt"
	"html/template"
	"image/color"
	"io"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/joulemark/joulemark/internal/svgplot"
	"github.com/joulemark/joulemark/report"
)

// ParetoGroup is one classification the Pareto page shows: a name ("" for
// a single one) and its classes.
type ParetoGroup struct {
	Name    string
	Classes []Class
}

// The Pareto page's scatter: steady-state J/token (lower is better)
// against throughput (higher is better).
var (
	paretoX = SteadyStateJPT
	paretoY = Throughput
)

var paretoPage = report.Page("pareto", nil, `{{define "title"}}joulemark pareto{{end}}{{define "class"}}wide{{end}}
{{define "body"}}<h1>joulemark pareto — {{.Runs}} runs</h1>
<p class="note">Classified over {{.Metrics}}. The figure shows two of them, {{.X}} against {{.Y}}: filled blue, the front (dominated by no other valid run);
filled orange, dominated runs labelled with their rank; hollow grey, invalid runs (left out of the classification). A run can sit on the front with a
worse place in this picture than a dominated one: it wins on a metric the picture does not show.</p>
{{range .Groups}}{{if .Name}}<h2>Group {{.Name}}</h2>{{end}}
<figure>{{if .Err}}<p class="missing">Not drawn: {{.Err}}</p>{{else}}{{.SVG}}{{end}}</figure>
<table>
<tr>{{range index .Rows 0}}<th>{{.}}</th>{{end}}</tr>
{{range slice .Rows 1}}<tr{{if eq (index . 2) "excluded"}} class="excluded"{{end}}>{{range .}}<td>{{.}}</td>{{end}}</tr>
{{end}}</table>
{{end}}
<p class="note">{{.Legend}}</p>{{end}}
`)

// WriteParetoHTML renders the classifications as one self-contained page,
// readable at 1280 px without horizontal scrolling: per group a scatter of
// steady-state J/token against throughput (the front filled, dominated
// runs labelled with their rank, invalid runs hollow) and the table.
func WriteParetoHTML(w io.Writer, groups []ParetoGroup, metrics []Metric) error {
	type groupHTML struct {
		Name string
		SVG  template.HTML
		Err  string
		Rows [][]string
	}
	var gs []groupHTML
	runs := 0
	for _, g := range groups {
		runs += len(g.Classes)
		gh := groupHTML{Name: g.Name, Rows: paretoRows(g.Classes, metrics)}
		p, err := paretoScatter(g.Classes)
		var s string
		if err == nil {
			s, err = svgplot.Inline(p, 24*vg.Centimeter, 13*vg.Centimeter)
		}
		if err != nil {
			gh.Err = err.Error()
		} else {
			// the SVG comes from gonum/plot, which escapes the text it draws
			gh.SVG = template.HTML(s)
		}
		gs = append(gs, gh)
	}
	var keys []string
	for _, m := range metrics {
		keys = append(keys, m.Key)
	}
	return paretoPage.Execute(w, struct {
		Runs          int
		Metrics, X, Y string
		Groups        []groupHTML
		Legend        string
	}{runs, strings.Join(keys, ", "), paretoX.Header(), paretoY.Header(), gs, paretoLegend})
}

// WriteParetoHTMLFile writes the page to path; an existing file is never
// overwritten.
func WriteParetoHTMLFile(path string, groups []ParetoGroup, metrics []Metric) error {
	var b bytes.Buffer
	if err := WriteParetoHTML(&b, groups, metrics); err != nil {
		return err
	}
	return WriteFileNew(path, b.Bytes())
}

var (
	frontColor     = color.NRGBA{R: 0x1f, G: 0x3b, B: 0x73, A: 0xff}
	dominatedColor = color.NRGBA{R: 0xe0, G: 0x6c, B: 0x00, A: 0xff}
	invalidColor   = color.NRGBA{R: 0x80, G: 0x80, B: 0x80, A: 0xff}
)

// paretoScatter draws the runs having both figures; the others are in the
// table only.
func paretoScatter(classes []Class) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = "Pareto classification: " + paretoX.Header() + " against " + paretoY.Header()
	p.X.Label.Text = paretoX.Header() + paretoX.Dir.Arrow() + " (" + paretoX.Unit + ")"
	p.Y.Label.Text = paretoY.Header() + paretoY.Dir.Arrow() + " (" + paretoY.Unit + ")"
	kinds := []struct {
		legend string
		c      color.Color
		shape  draw.GlyphDrawer
		in     func(Class) bool
		label  func(Class) string
	}{
		{"front", frontColor, draw.CircleGlyph{}, Class.Front, func(c Class) string { return c.Run.Name }},
		{"dominated (rank)", dominatedColor, draw.CircleGlyph{}, func(c Class) bool { return c.Excluded == "" && !c.Front() },
			func(c Class) string { return fmt.Sprintf("%s (rank %d)", c.Run.Name, c.Rank) }},
		{"invalid (left out)", invalidColor, draw.RingGlyph{}, func(c Class) bool { return c.Excluded != "" },
			func(c Class) string { return c.Run.Name + " (invalid)" }},
	}
	drawn := 0
	for _, k := range kinds {
		var xys plotter.XYs
		var labels []string
		for _, c := range classes {
			x, okx := paretoX.Of(c.Run)
			y, oky := paretoY.Of(c.Run)
			if !okx || !oky || !k.in(c) {
				continue
			}
			xys = append(xys, plotter.XY{X: x, Y: y})
			labels = append(labels, k.label(c))
		}
		if len(xys) == 0 {
			continue
		}
		drawn += len(xys)
		sc, err := plotter.NewScatter(xys)
		if err != nil {
			return nil, err
		}
		sc.Color, sc.Shape, sc.Radius = k.c, k.shape, vg.Points(4)
		lb, err := plotter.NewLabels(plotter.XYLabels{XYs: xys, Labels: labels})
		if err != nil {
			return nil, err
		}
		lb.Offset = vg.Point{X: 6, Y: -3}
		p.Add(sc, lb)
		p.Legend.Add(k.legend, sc)
	}
	if drawn == 0 {
		return nil, fmt.Errorf("no run has both %s and %s", paretoX.Key, paretoY.Key)
	}
	p.Legend.Top = true
	p.X.Min = 0
	p.Y.Min = 0
	// room on the right for the labels, above for the legend
	p.X.Max *= 1.3
	p.Y.Max *= 1.25
	return p, nil
}
