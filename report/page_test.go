package report

import (
	"strings"
	"testing"
)

// TestPage: a page gets the shell's head, style and footer around its own
// title, body class and body.
func TestPage(t *testing.T) {
	p := Page("t", nil, `{{define "title"}}T {{.}}{{end}}{{define "class"}}wide{{end}}{{define "body"}}<p>{{.}}</p>{{end}}`)
	var b strings.Builder
	if err := p.Execute(&b, "<x>"); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, want := range []string{"<title>T &lt;x&gt;</title>", `<body class="wide">`, "<p>&lt;x&gt;</p>", "body.wide table", "<footer>", "</html>"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q:\n%s", want, page)
		}
	}
	b.Reset()
	if err := Page("u", nil, `{{define "body"}}b{{end}}`).Execute(&b, nil); err != nil || !strings.Contains(b.String(), `<title>joulemark</title>`) || !strings.Contains(b.String(), `<body class="">`) {
		t.Errorf("defaults: %v\n%s", err, b.String())
	}
}
