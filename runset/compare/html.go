package compare

import (
	"bytes"
	"fmt"
	"html/template"
	"image/color"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/joulemark/joulemark/internal/atomicfile"
	"github.com/joulemark/joulemark/internal/svgplot"
	"github.com/joulemark/joulemark/report"
	"github.com/joulemark/joulemark/runset"
)

// FileHTML is the comparison page compare --out writes.
const FileHTML = "compare.html"

var comparePage = report.Page("compare", template.FuncMap{
	"hasPrefix": strings.HasPrefix,
}, `{{define "title"}}joulemark compare{{end}}{{define "class"}}wide{{end}}
{{define "body"}}<h1>joulemark compare — {{len .Res.Runs}} runs</h1>
{{range .Sweeps}}<h2>Sweep: {{.Key}}</h2>
<p class="{{if .Knee}}good{{else}}bad{{end}}">{{.Verdict}}</p>
{{range .Figures}}<figure>{{if .Err}}<p class="missing">Not drawn: {{.Err}}</p>{{else}}{{.SVG}}{{end}}</figure>
{{end}}{{end}}
<h2>All runs</h2>
{{template "table" .Runs}}
<p class="note">{{.Comparability}}</p>
<h2>Groups by {{.Res.GroupBy}} (medians over included runs)</h2>
{{template "table" .Groups}}
<p class="note">{{.Spearman}}</p>
{{if .Repetitions}}<h2>Repetition groups</h2>
{{template "table" .Repetitions}}
<p class="note">{{.RepetitionNote}}</p>{{end}}{{end}}
{{define "table"}}<table>
<tr>{{range index . 0}}<th>{{.}}</th>{{end}}</tr>
{{range slice . 1}}<tr{{if hasPrefix (index . 3) "excluded"}} class="excluded"{{end}}>{{range .}}<td>{{.}}</td>{{end}}</tr>
{{end}}</table>{{end}}
`)

type figure struct {
	SVG template.HTML
	Err string
}

// WriteHTML renders the comparison as one self-contained page, readable
// at 1280 px without horizontal scrolling: per sweep its J/token and its
// p95 latencies against load with the SLOs and the knee (invalid runs as
// hollow markers, never a point), then the tables of runs and groups.
func WriteHTML(w io.Writer, res Result) error {
	type sweepHTML struct {
		Key, Knee, Verdict string
		Figures            []figure
	}
	var sweeps []sweepHTML
	for _, sw := range res.Sweeps {
		sh := sweepHTML{Key: sw.Key, Knee: sw.Knee, Verdict: kneeVerdict(sw)}
		for _, mk := range []func(Sweep) (*plot.Plot, error){jptVsLoad, latencyVsLoad("TTFT", func(p SweepPoint) *float64 { return p.TTFTP95 }, func(r InvalidRun) *float64 { return r.TTFTP95 }, sw.TTFTSLOSeconds),
			latencyVsLoad("TPOT", func(p SweepPoint) *float64 { return p.TPOTP95 }, func(r InvalidRun) *float64 { return r.TPOTP95 }, sw.TPOTSLOSeconds)} {
			p, err := mk(sw)
			var s string
			if err == nil {
				s, err = svgplot.Inline(p, 24*vg.Centimeter, 8*vg.Centimeter)
			}
			if err != nil {
				sh.Figures = append(sh.Figures, figure{Err: err.Error()})
				continue
			}
			// the SVG comes from gonum/plot, which escapes the text it draws
			sh.Figures = append(sh.Figures, figure{SVG: template.HTML(s)})
		}
		sweeps = append(sweeps, sh)
	}
	comp := "comparability (formal output tokens within " + strconv.FormatFloat(100*res.Tolerance, 'g', 4, 64) +
		"%, |a-b|/max, included runs): " + spreadText(res.Comparability)
	spear := "Spearman rank correlation: - (" + res.SpearmanNote + ")"
	if res.Spearman != nil {
		spear = fmt.Sprintf("Spearman rank correlation, steady-state vs full-lifecycle order of %d groups: %s",
			res.SpearmanN, strconv.FormatFloat(*res.Spearman, 'g', 4, 64))
	}
	return comparePage.Execute(w, struct {
		Res                     Result
		Sweeps                  []sweepHTML
		Runs, Groups            [][]string
		Comparability, Spearman string
		Repetitions             [][]string
		RepetitionNote          string
	}{res, sweeps, runRows(res), groupRows(res), comp, spear, repNil(res), repetitionNote()})
}

// repNil is the repetition table, nil without a repetition group.
func repNil(res Result) [][]string {
	if len(res.Repetitions) == 0 {
		return nil
	}
	return repetitionRows(res)
}

func repetitionNote() string {
	b := runset.FormatValue(100*runset.AgreementBound, true)
	return strings.TrimSpace(fmt.Sprintf(repetitionLegend, b, b))
}

func kneeVerdict(sw Sweep) string {
	switch {
	case sw.Knee == "":
		return "No knee: the lightest point already misses the SLOs."
	case sw.After == "":
		return "Every point meets the SLOs up to " + sw.Knee + "; load further to find the knee."
	}
	return "Knee at " + sw.Knee + ". At " + sw.After + ": " + diagText(sw.AfterDiagnosis) + "."
}

// WriteHTMLFile writes compare.html into dir (created when missing); an
// existing compare.html is never overwritten.
func WriteHTMLFile(dir string, res Result) error {
	var b bytes.Buffer
	if err := WriteHTML(&b, res); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("compare --out: %w", err)
	}
	return atomicfile.WriteFileNew(filepath.Join(dir, FileHTML), b.Bytes())
}

var (
	blue = color.NRGBA{R: 0x1f, G: 0x3b, B: 0x73, A: 0xff}
	oran = color.NRGBA{R: 0xe0, G: 0x6c, B: 0x00, A: 0xff}
	red  = color.NRGBA{R: 0xc6, G: 0x28, B: 0x28, A: 0xff}
	grey = color.NRGBA{R: 0x80, G: 0x80, B: 0x80, A: 0xff}
)

// series adds a line with points for the values present.
func series(p *plot.Plot, sw Sweep, v func(SweepPoint) *float64, scale float64, c color.Color, label string) (ymax float64, err error) {
	var xy plotter.XYs
	for _, pt := range sw.Points {
		if y := v(pt); y != nil {
			xy = append(xy, plotter.XY{X: pt.Value, Y: *y * scale})
			ymax = max(ymax, *y*scale)
		}
	}
	if len(xy) == 0 {
		return 0, nil
	}
	ln, sc, err := plotter.NewLinePoints(xy)
	if err != nil {
		return 0, err
	}
	ln.Color, ln.Width = c, vg.Points(1.5)
	sc.Color, sc.Shape, sc.Radius = c, draw.CircleGlyph{}, vg.Points(3)
	p.Add(ln, sc)
	p.Legend.Add(label, ln, sc)
	return ymax, nil
}

// invalidMarks draws the invalid runs' own values as hollow grey rings:
// shown, never joined to the line of medians.
func invalidMarks(p *plot.Plot, sw Sweep, v func(InvalidRun) *float64, scale float64) (ymax float64, err error) {
	var xy plotter.XYs
	for _, pt := range sw.Points {
		for _, iv := range pt.Invalid {
			if y := v(iv); y != nil {
				xy = append(xy, plotter.XY{X: pt.Value, Y: *y * scale})
				ymax = max(ymax, *y*scale)
			}
		}
	}
	if len(xy) == 0 {
		return 0, nil
	}
	sc, err := plotter.NewScatter(xy)
	if err != nil {
		return 0, err
	}
	sc.Color, sc.Shape, sc.Radius = grey, draw.RingGlyph{}, vg.Points(4)
	p.Add(sc)
	p.Legend.Add("invalid run (left out)", sc)
	return ymax, nil
}

// kneeLine marks the knee with a dashed vertical line and its name.
func kneeLine(p *plot.Plot, sw Sweep, ymax float64) error {
	if sw.Knee == "" {
		return nil
	}
	ln, err := plotter.NewLine(plotter.XYs{{X: sw.KneeValue, Y: 0}, {X: sw.KneeValue, Y: ymax}})
	if err != nil {
		return err
	}
	ln.Color, ln.Width, ln.Dashes = color.NRGBA{R: 0x2e, G: 0x7d, B: 0x32, A: 0xff}, vg.Points(1.4), []vg.Length{vg.Points(4), vg.Points(3)}
	p.Add(ln)
	lb, err := plotter.NewLabels(plotter.XYLabels{XYs: plotter.XYs{{X: sw.KneeValue, Y: ymax}}, Labels: []string{"knee"}})
	if err != nil {
		return err
	}
	lb.Offset = vg.Point{X: 4, Y: -12}
	p.Add(lb)
	return nil
}

func loadAxis(p *plot.Plot, sw Sweep) {
	p.X.Label.Text = "load (" + strings.SplitN(sw.Points[0].Load, " ", 2)[0] + ")"
	lo, hi := sw.Points[0].Value, sw.Points[len(sw.Points)-1].Value
	pad := (hi - lo) * 0.05
	p.X.Min, p.X.Max = lo-pad, hi+pad
	var ticks []plot.Tick // one per load point, so none sits on the edge
	for _, pt := range sw.Points {
		ticks = append(ticks, plot.Tick{Value: pt.Value, Label: strconv.FormatFloat(pt.Value, 'g', 4, 64)})
	}
	p.X.Tick.Marker = plot.ConstantTicks(ticks)
	p.Legend.Top, p.Legend.Left = true, true
	p.Legend.XOffs = vg.Points(6)
}

// jptVsLoad: steady-state and full-lifecycle J/token against load.
func jptVsLoad(sw Sweep) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = "J/token against load (medians per point)"
	p.Y.Label.Text = "J/token"
	y1, err := series(p, sw, func(pt SweepPoint) *float64 { return pt.SteadyStateJPT }, 1, blue, "steady state")
	if err != nil {
		return nil, err
	}
	y2, err := series(p, sw, func(pt SweepPoint) *float64 { return pt.LifecycleJPT }, 1, oran, "full lifecycle")
	if err != nil {
		return nil, err
	}
	y3, err := invalidMarks(p, sw, func(iv InvalidRun) *float64 { return iv.SteadyStateJPT }, 1)
	if err != nil {
		return nil, err
	}
	ymax := max(y1, y2, y3) * 1.45 // legend headroom
	if ymax == 0 {
		return nil, fmt.Errorf("no J/token in the sweep's reports")
	}
	if err := kneeLine(p, sw, ymax); err != nil {
		return nil, err
	}
	loadAxis(p, sw)
	p.Y.Min, p.Y.Max = 0, ymax
	return p, nil
}

// latencyVsLoad: a p95 latency (ms) against load with its SLO.
func latencyVsLoad(name string, v func(SweepPoint) *float64, iv func(InvalidRun) *float64, slo *float64) func(Sweep) (*plot.Plot, error) {
	return func(sw Sweep) (*plot.Plot, error) {
		p := plot.New()
		p.Title.Text = name + " p95 against load (medians per point)"
		p.Y.Label.Text = "ms"
		ymax, err := series(p, sw, v, 1000, blue, name+" p95")
		if err != nil {
			return nil, err
		}
		if ymax == 0 {
			return nil, fmt.Errorf("no %s p95 in the sweep's valid reports", name)
		}
		yi, err := invalidMarks(p, sw, iv, 1000)
		if err != nil {
			return nil, err
		}
		ymax = max(ymax, yi)
		if slo != nil && *slo > 0 {
			s := *slo * 1000
			ymax = max(ymax, s)
			ln, err := plotter.NewLine(plotter.XYs{{X: sw.Points[0].Value, Y: s}, {X: sw.Points[len(sw.Points)-1].Value, Y: s}})
			if err != nil {
				return nil, err
			}
			ln.Color, ln.Width, ln.Dashes = red, vg.Points(1.5), []vg.Length{vg.Points(5), vg.Points(3)}
			p.Add(ln)
			p.Legend.Add("SLO "+strconv.FormatFloat(s, 'g', 4, 64)+" ms", ln)
		}
		ymax *= 1.45
		if err := kneeLine(p, sw, ymax); err != nil {
			return nil, err
		}
		loadAxis(p, sw)
		p.Y.Min, p.Y.Max = 0, ymax
		return p, nil
	}
}
