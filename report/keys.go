package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/joulemark/joulemark/internal/jsonline"
)

// RequiredKeys are the top-level keys of every report analyze writes
// (docs/design.md, "Report (report.json) — stable keys"); a figure that
// could not be computed is null, never absent.
var RequiredKeys = []string{
	"run_id", "valid", "flags", "stages", "energy", "release", "requests", "tokens",
	"throughput_tokens_per_second", "avg_gpu_power_watts", "full_lifecycle_joules_per_token",
	"steady_state", "latency", "goodput", "lifecycle_estimate", "measurement",
}

// DecodeDocument reads a report.json an analyze run wrote: the report
// (Decode) and the same document as generic JSON (numbers as
// json.Number), for lookups by dotted key, including keys newer than
// this reader. A document lacking one of RequiredKeys, or whose run_id is
// empty, is refused, so `{}` or another JSON file is never read as an
// empty report.
func DecodeDocument(data []byte) (*Report, map[string]any, error) {
	r, err := Decode(data)
	if err != nil {
		return nil, nil, err
	}
	var doc map[string]any
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	if err := d.Decode(&doc); err != nil {
		return nil, nil, jsonline.Wrap(data, err)
	}
	if err := checkKeys(doc); err != nil {
		return nil, nil, err
	}
	return r, doc, nil
}

// checkKeys says which required keys the document lacks.
func checkKeys(doc map[string]any) error {
	var missing []string
	for _, k := range RequiredKeys {
		if _, ok := doc[k]; !ok {
			missing = append(missing, k)
		}
	}
	switch {
	case len(missing) == len(RequiredKeys):
		return fmt.Errorf("not a joulemark report: none of its keys (%s)", strings.Join(RequiredKeys, ", "))
	case len(missing) > 0:
		return fmt.Errorf("not a complete joulemark report: missing %s", strings.Join(missing, ", "))
	}
	if id, ok := doc["run_id"].(string); !ok || id == "" {
		return fmt.Errorf("not a joulemark report: run_id is %v, want a run id", doc["run_id"])
	}
	return nil
}
