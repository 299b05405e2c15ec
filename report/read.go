package report

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/joulemark/joulemark/internal/jsonline"
)

// Decode reads report.json's content; a syntax or type error names its
// line. Unknown keys are ignored (a newer report reads in an older
// reader; FORMAT.md, "Compatibility").
func Decode(data []byte) (*Report, error) {
	var r Report
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, jsonline.Wrap(data, err)
	}
	return &r, nil
}

// Load reads the report at path: a report.json file, or a directory
// holding one (analyze --out). Errors name the file.
func Load(path string) (*Report, error) {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		path = filepath.Join(path, FileJSON)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read report: %w", err)
	}
	r, err := Decode(data)
	if err != nil {
		return nil, fmt.Errorf("report %s: %w", path, err)
	}
	return r, nil
}
