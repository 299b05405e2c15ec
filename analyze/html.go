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
var htmlPage = template.Must(template.New("report").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>joulemark report — {{.RunID}}</title>
<style>
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; max-width: 1100px; margin: 2em auto; padding: 0 1em; color: #1b1b1b; line-height: 1.45; }
h1 { font-size: 1.6em; border-bottom: 2px solid #ddd; padding-bottom: .3em; }
h2 { font-size: 1.25em; margin-top: 1.6em; border-bottom: 1px solid #eee; }
table { border-collapse: collapse; margin: .6em 0; font-size: .92em; }
th, td { border: 1px solid #d0d0d0; padding: .25em .6em; }
th { background: #f4f4f4; }
td { font-variant-numeric: tabular-nums; }
code { background: #f2f2f2; padding: 0 .25em; border-radius: 3px; }
.verdict-invalid { background: #fdecea; border-left: 5px solid #c62828; padding: .4em .8em; }
.verdict-valid { background: #edf7ed; border-left: 5px solid #2e7d32; padding: .4em .8em; }
figure { margin: 1.2em 0; }
figure svg { max-width: 100%; height: auto; }
figcaption { font-weight: 600; margin-bottom: .3em; }
.missing { color: #8a6d3b; font-style: italic; }
</style>
</head>
<body>
<div class="{{if .Valid}}verdict-valid{{else}}verdict-invalid{{end}}">Run <code>{{.RunID}}</code>: {{if .Valid}}valid{{else}}not valid — excluded from formal results and comparisons{{end}}.</div>
{{.Head}}
<h2 id="plots">Plots</h2>
{{range .Plots}}<figure>
<figcaption>{{.Title}}</figcaption>
{{if .Err}}<p class="missing">Not drawn: {{.Err}}</p>{{else}}{{.SVG}}{{end}}
</figure>
{{end}}
{{.Rest}}
</body>
</html>
`))

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
