package report

import (
	"github.com/joulemark/joulemark/internal/runarchive"
)

// Quality is report.json "quality": the successful formal answers checked
// against their rubric (correctness workload or workload.quality_file),
// from the archive's requests.jsonl. Absent when no answer was checked.
type Quality struct {
	runarchive.QualitySummary
	MinPassRate float64 `json:"min_pass_rate"`
}
