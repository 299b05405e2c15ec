package report

import (
	"github.com/joulemark/joulemark/analyze/quality"
)

// Quality is report.json "quality": the successful formal answers checked
// against their rubric (correctness workload or workload.quality_file),
// from the archive's requests.jsonl. Absent when no answer was checked.
type Quality struct {
	quality.Summary
	MinPassRate float64 `json:"min_pass_rate"`
}
