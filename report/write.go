package report

import (
	"encoding/json"
	"errors"
	"fmt"
)

// Report file names inside the output directory.
const (
	FileJSON     = "report.json"
	FileMarkdown = "report.md"
	FileHTML     = "report.html"
)

// ErrReportExists is returned when the output directory already holds files.
var ErrReportExists = errors.New("output directory exists and is not empty")

// MarshalReport is report.json's content.
func MarshalReport(r *Report) ([]byte, error) {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encoding report.json: %w", err)
	}
	return append(b, '\n'), nil
}
