package report

import "html/template"

// pageCSS is the style every joulemark page shares. Tables are bordered
// grids of figures; a "wide" page (many columns: pareto, compare) gets
// full-width tables with row rules and wrapping cells instead.
const pageCSS = `body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; max-width: 1100px; margin: 2em auto; padding: 0 1em; color: #1b1b1b; line-height: 1.45; }
h1 { font-size: 1.6em; border-bottom: 2px solid #ddd; padding-bottom: .3em; }
h2 { font-size: 1.25em; margin-top: 1.6em; border-bottom: 1px solid #eee; }
table { border-collapse: collapse; margin: .6em 0; font-size: .92em; }
th, td { border: 1px solid #d0d0d0; padding: .25em .6em; }
th { background: #f4f4f4; }
td { font-variant-numeric: tabular-nums; }
body.wide table { width: 100%; font-size: .78em; }
body.wide th, body.wide td { border: 0; border-bottom: 1px solid #e3e3e3; padding: .25em .4em; text-align: left; vertical-align: top; overflow-wrap: break-word; }
body.wide th { background: #f3f3f3; }
tr.excluded td { color: #777; }
code { background: #f2f2f2; padding: 0 .25em; border-radius: 3px; }
.good { background: #edf7ed; border-left: 5px solid #2e7d32; padding: .4em .8em; }
.bad { background: #fdecea; border-left: 5px solid #c62828; padding: .4em .8em; }
figure { margin: 1.2em 0; }
figure svg { max-width: 100%; height: auto; }
figcaption { font-weight: 600; margin-bottom: .3em; }
.note { font-size: .85em; color: #444; }
.missing { color: #8a6d3b; font-style: italic; }
footer { margin-top: 2em; border-top: 1px solid #eee; font-size: .8em; color: #666; }
`

// pageShell is the page around a page's "body": head, style, and the
// footer. A page may redefine "title", "class" (the body's class: "wide")
// and "header" (what comes before the body).
const pageShell = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{template "title" .}}</title>
<style>
` + pageCSS + `</style>
</head>
<body class="{{template "class" .}}">
{{template "header" .}}{{template "body" .}}
<footer>Written by joulemark: one self-contained page, no script, no external resource.</footer>
</body>
</html>
{{define "title"}}joulemark{{end}}{{define "class"}}{{end}}{{define "header"}}{{end}}{{define "body"}}{{end}}`

// Page is the one HTML page shell of every joulemark page (report.html of
// analyze and production, pareto.html, compare.html): body holds the
// page's {{define "title"}}, {{define "body"}} and, optionally,
// {{define "class"}} and {{define "header"}}; funcs (may be nil) are
// available to it. Execute the result to render the whole page. It panics
// on a body that does not parse, as template.Must: call it at init.
func Page(name string, funcs template.FuncMap, body string) *template.Template {
	t := template.Must(template.New(name).Parse(pageShell))
	return template.Must(t.New(name + ".body").Funcs(funcs).Parse(body)).Lookup(name)
}
