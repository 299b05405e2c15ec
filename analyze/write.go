package analyze

import (
	"bytes"
	"fmt"

	"github.com/joulemark/joulemark/report"
)

// WriteReport renders the report and writes it into dir with report.Write
// (all at once; never over an earlier report). pd may be nil (no plots).
func WriteReport(dir string, r *report.Report, pd *PlotData) error {
	_, err := writeReport(dir, false, r, pd)
	return err
}

// writeReport renders the report and writes it into dir with report.Write
// or, keepEarlier, with report.WriteKeeping (an earlier report there moves
// to dir.N); kept is where the earlier report went, "" when there was none.
func writeReport(dir string, keepEarlier bool, r *report.Report, pd *PlotData) (kept string, err error) {
	f, err := render(r, pd)
	if err != nil {
		return "", err
	}
	if keepEarlier {
		return report.WriteKeeping(dir, f)
	}
	return "", report.Write(dir, f)
}

// render is the report's three files.
func render(r *report.Report, pd *PlotData) (report.Files, error) {
	js, err := report.Marshal(r)
	if err != nil {
		return report.Files{}, err
	}
	var md, html bytes.Buffer
	if err := WriteMarkdown(&md, r); err != nil {
		return report.Files{}, fmt.Errorf("rendering %s: %w", report.FileMarkdown, err)
	}
	if err := WriteHTML(&html, r, pd); err != nil {
		return report.Files{}, fmt.Errorf("rendering %s: %w", report.FileHTML, err)
	}
	return report.Files{JSON: js, Markdown: md.Bytes(), HTML: html.Bytes()}, nil
}
