package production

import (
	"bytes"
	"errors"
	"fmt"
	"html/template"
	"io"
	"strings"
	"time"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"github.com/joulemark/joulemark/internal/svgplot"
	"github.com/joulemark/joulemark/report"
)

// Report is report.json. Energy is GPU energy (Boundary says board or
// module), in joules; times are unix seconds.
type Report struct {
	From      float64 `json:"from"`
	To        float64 `json:"to"`
	Namespace string  `json:"namespace,omitempty"`
	Model     string  `json:"model,omitempty"`
	// Boundary is what the energy covers: analyze.Boundary (GPU boards),
	// or analyze.BoundaryModule where an exporter measured a C2C module
	// in the range.
	Boundary string `json:"boundary"`
	// EnergyJoules is the energy of every pod reported.
	EnergyJoules float64        `json:"energy_joules"`
	Models       []ModelFigures `json:"models"`
	Pods         []PodFigures   `json:"pods"`
	Starts       []Start        `json:"starts"`
	// UnallocatedJoules is the energy of GPUs no pod held, on every node
	// (not filtered by namespace or model).
	UnallocatedJoules      float64       `json:"unallocated_energy_joules"`
	JoulesPerTokenOverTime []ModelPoints `json:"joules_per_token_over_time"`
	// Cost prices the models' and namespaces' energy; only with cost inputs.
	Cost *Cost `json:"cost,omitempty"`
}

// ModelFigures sums a model's pods.
type ModelFigures struct {
	Model               string   `json:"model"`
	Pods                int      `json:"pods"`
	EnergyJoules        float64  `json:"energy_joules"`
	OutputTokens        float64  `json:"output_tokens"`
	JoulesPerToken      *float64 `json:"joules_per_token"`
	IdleAllocatedJoules float64  `json:"idle_allocated_energy_joules"`
	IdleAllocatedRatio  *float64 `json:"idle_allocated_ratio"`
	Starts              int      `json:"starts"`
	StartupJoules       float64  `json:"startup_energy_joules"`
}

// PodFigures is one pod (all its containers). Model is empty for a pod
// without an engine token counter.
type PodFigures struct {
	Namespace           string   `json:"namespace"`
	Pod                 string   `json:"pod"`
	Model               string   `json:"model,omitempty"`
	EnergyJoules        float64  `json:"energy_joules"`
	OutputTokens        float64  `json:"output_tokens"`
	JoulesPerToken      *float64 `json:"joules_per_token"`
	IdleAllocatedJoules float64  `json:"idle_allocated_energy_joules"`
	IdleAllocatedRatio  *float64 `json:"idle_allocated_ratio"`
}

// Start is an engine's (re)start inside the range, seen by one of two
// sources (Source). An allocation start runs from the pod's GPU
// allocation appearing (AllocatedAt) to its first generated token (the
// first scrape showing one). A bench start is a bench-started engine: from
// its run's startup phase start (AllocatedAt) to its warm-up's end, with
// the exporters' phase energy of both phases (the run report's
// energy.startup_joules); it takes the pod holding the run's GPUs, when
// one does. EndAt is where the start's energy stops; Complete is false
// when that is not before the range's end, the energy then running to it.
type Start struct {
	Source      string  `json:"source"`
	RunID       string  `json:"run_id,omitempty"`
	Namespace   string  `json:"namespace"`
	Pod         string  `json:"pod"`
	Model       string  `json:"model,omitempty"`
	AllocatedAt float64 `json:"allocated_at"`
	// ReadyAt is when the engine became ready (ReadySignal says how it
	// shows: ReadyFirstScrape); an allocation start ends there.
	ReadyAt      *float64 `json:"ready_at"`
	ReadySignal  string   `json:"ready_signal,omitempty"`
	FirstTokenAt *float64 `json:"first_token_at"`
	EndAt        *float64 `json:"end_at"`
	EnergyJoules float64  `json:"startup_energy_joules"`
	Complete     bool     `json:"complete"`
}

// Start sources.
const (
	StartAllocation = "allocation"
	StartBench      = "bench"
)

// ReadyFirstScrape: the engine's readiness is the first scrape of its
// metrics after the allocation (vLLM and SGLang serve /metrics once the
// model is loaded and the server answers). The data holds no health
// check, so this is the signal.
const ReadyFirstScrape = "first_scrape"

// ModelPoints is a model's J/token over time.
type ModelPoints struct {
	Model  string  `json:"model"`
	Points []Point `json:"points"`
}

// Point is J/token over the window ending at T.
type Point struct {
	T              float64 `json:"t"`
	JoulesPerToken float64 `json:"joules_per_token"`
}

// Write writes report.json, report.md and report.html into dir with
// report.Write: all at once, never over an earlier report.
func Write(dir string, r *Report) error {
	js, err := report.Marshal(r)
	if err != nil {
		return err
	}
	var md, html bytes.Buffer
	if err := WriteMarkdown(&md, r); err != nil {
		return fmt.Errorf("rendering %s: %w", report.FileMarkdown, err)
	}
	if err := WriteHTML(&html, r); err != nil {
		return fmt.Errorf("rendering %s: %w", report.FileHTML, err)
	}
	return report.Write(dir, report.Files{JSON: js, Markdown: md.Bytes(), HTML: html.Bytes()})
}

func utc(t float64) string {
	return time.Unix(0, int64(t*1e9)).UTC().Format(time.RFC3339)
}

func opt(v *float64, format string) string {
	if v == nil {
		return "–"
	}
	return fmt.Sprintf(format, *v)
}

// WriteMarkdown renders report.md.
func WriteMarkdown(w io.Writer, r *Report) error {
	var b strings.Builder
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	p("# Production energy, %s to %s\n\n", utc(r.From), utc(r.To))
	if r.Namespace != "" || r.Model != "" {
		p("Filter: namespace `%s`, model `%s`.\n\n", or(r.Namespace, "*"), or(r.Model, "*"))
	}
	p("%s, integrated by the joulemark exporter per pod over the GPUs the kubelet lists for it. ", r.Boundary)
	p("Pods: %.0f J in all; unallocated GPUs (every node): %.0f J.\n\n", r.EnergyJoules, r.UnallocatedJoules)
	p("## Per model\n\n| model | pods | energy (J) | output tokens | J/token | idle-allocated (J) | idle share | starts | startup energy (J) |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, m := range r.Models {
		p("| %s | %d | %.0f | %.0f | %s | %.0f | %s | %d | %.0f |\n", m.Model, m.Pods, m.EnergyJoules, m.OutputTokens,
			opt(m.JoulesPerToken, "%.4g"), m.IdleAllocatedJoules, pct(m.IdleAllocatedRatio), m.Starts, m.StartupJoules)
	}
	p("\n## Per pod\n\n| namespace | pod | model | energy (J) | output tokens | J/token | idle-allocated (J) | idle share |\n|---|---|---|---|---|---|---|---|\n")
	for _, x := range r.Pods {
		p("| %s | %s | %s | %.0f | %.0f | %s | %.0f | %s |\n", x.Namespace, x.Pod, or(x.Model, "–"), x.EnergyJoules, x.OutputTokens,
			opt(x.JoulesPerToken, "%.4g"), x.IdleAllocatedJoules, pct(x.IdleAllocatedRatio))
	}
	p("\n## (Re)starts\n\nWhat a (re)start or a rolling deploy costs: from the pod's GPU allocation appearing to its engine's readiness (the first scrape of its metrics; the time after it, with or without tokens, is serving or idle energy, not startup), or, for an engine the bench started, from its run's startup phase to the end of its warm-up (the exporters' phase energy).\n\n")
	if len(r.Starts) == 0 {
		p("None in the range.\n")
	} else {
		p("| seen by | namespace | pod | model | from | to | startup energy (J) |\n|---|---|---|---|---|---|---|\n")
		for _, s := range r.Starts {
			end := "none before the range's end"
			if s.EndAt != nil {
				end = fmt.Sprintf("%s (+%.0f s)", utc(*s.EndAt), *s.EndAt-s.AllocatedAt)
			}
			if s.ReadySignal == ReadyFirstScrape {
				end += ", ready (first scrape)"
			}
			src := "GPU allocation"
			if s.Source == StartBench {
				src = "bench run " + s.RunID
			}
			p("| %s | %s | %s | %s | %s | %s | %.0f |\n", src, or(s.Namespace, "–"), or(s.Pod, "–"), or(s.Model, "–"), utc(s.AllocatedAt), end, s.EnergyJoules)
		}
	}
	costMarkdown(p, r)
	_, err := io.WriteString(w, b.String())
	return err
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func pct(v *float64) string {
	if v == nil {
		return "–"
	}
	return fmt.Sprintf("%.1f%%", *v*100)
}

var htmlPage = report.Page("production", nil, `{{define "title"}}joulemark production report{{end}}
{{define "body"}}{{.Body}}
<h2>J/token per model over time</h2>
<figure>{{if .Err}}<p class="missing">Not drawn: {{.Err}}</p>{{else}}{{.SVG}}{{end}}</figure>{{end}}
`)

// WriteHTML renders report.html: report.md as HTML and the per-model
// J/token-over-time plot as inline SVG (no external resource).
func WriteHTML(w io.Writer, r *Report) error {
	var md, body bytes.Buffer
	if err := WriteMarkdown(&md, r); err != nil {
		return err
	}
	if err := goldmark.New(goldmark.WithExtensions(extension.Table)).Convert(md.Bytes(), &body); err != nil {
		return fmt.Errorf("markdown to HTML: %w", err)
	}
	data := struct {
		Body template.HTML
		SVG  template.HTML
		Err  string
	}{Body: template.HTML(body.String())}
	if s, err := jptPlot(r); err != nil {
		data.Err = err.Error()
	} else {
		data.SVG = template.HTML(s)
	}
	return htmlPage.Execute(w, data)
}

// jptPlot draws every model's J/token over time, as inline SVG.
func jptPlot(r *Report) (string, error) {
	p := plot.New()
	p.Title.Text = "J/token per model (5-minute windows)"
	p.X.Label.Text = "minutes since " + utc(r.From)
	p.Y.Label.Text = "J/token"
	n := 0
	for i, m := range r.JoulesPerTokenOverTime {
		if len(m.Points) == 0 {
			continue
		}
		xy := make(plotter.XYs, len(m.Points))
		for k, pt := range m.Points {
			xy[k].X, xy[k].Y = (pt.T-r.From)/60, pt.JoulesPerToken
		}
		l, err := plotter.NewLine(xy)
		if err != nil {
			return "", err
		}
		l.Color = plotutil.Color(i)
		l.Width = vg.Points(1.5)
		p.Add(l)
		p.Legend.Add(m.Model, l)
		n++
	}
	if n == 0 {
		return "", errors.New("no model generated tokens in the range")
	}
	p.Y.Min = 0
	return svgplot.Inline(p, 24*vg.Centimeter, 10*vg.Centimeter)
}
