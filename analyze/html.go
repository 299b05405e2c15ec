package analyze

import (
	"bytes"
	"fmt"
	"html/template"
	"io"

	"github.com/joulemark/joulemark/report"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"
)

// htmlPage is report.html: report.md rendered to HTML, its headline part
// (verdict, flags, J/token with intervals) first, then the plots as inline
// SVG, then the rest. No script, no external resource: it works offline.
var htmlPage = report.Page("report", nil, `{{define "title"}}joulemark report — {{.RunID}}{{end}}
{{define "body"}}<div class="{{if .Valid}}good{{else}}bad{{end}}">Run <code>{{.RunID}}</code>: {{if .Valid}}valid{{else}}not valid — excluded from formal results and comparisons{{end}}.</div>
{{.Head}}
<h2 id="plots">Plots</h2>
{{range .Plots}}<figure>
<figcaption>{{.Title}}</figcaption>
{{if .Err}}<p class="missing">Not drawn: {{.Err}}</p>{{else}}{{.SVG}}{{end}}
</figure>
{{end}}
{{.Rest}}{{end}}
`)

// WriteHTML renders report.html.
func WriteHTML(w io.Writer, r *report.Report, pd *PlotData) error {
	headMD, restMD := markdownParts(r)
	gm := goldmark.New(goldmark.WithExtensions(extension.Table))
	var head, rest bytes.Buffer
	if err := gm.Convert([]byte(headMD), &head); err != nil {
		return fmt.Errorf("markdown to HTML: %w", err)
	}
	if err := gm.Convert([]byte(restMD), &rest); err != nil {
		return fmt.Errorf("markdown to HTML: %w", err)
	}
	type plotHTML struct {
		Title string
		SVG   template.HTML
		Err   string
	}
	var plots []plotHTML
	for _, p := range renderPlots(pd) {
		// The SVG comes from gonum/plot, which escapes the text it draws.
		plots = append(plots, plotHTML{Title: p.Title, SVG: template.HTML(p.SVG), Err: p.Err})
	}
	return htmlPage.Execute(w, struct {
		RunID      string
		Valid      bool
		Head, Rest template.HTML
		Plots      []plotHTML
	}{r.RunID, r.Valid, template.HTML(head.String()), template.HTML(rest.String()), plots})
}
