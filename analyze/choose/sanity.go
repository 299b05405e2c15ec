package choose

import (
	"github.com/joulemark/joulemark/analyze/outputsanity"
	"github.com/joulemark/joulemark/report"
)

// Sanity counts the outputs of a run's successful formal requests that say
// the model or engine broke: empty, repeated and short outputs. It is
// report.OutputCounts, which analyze also puts in the report.
type Sanity = report.OutputCounts

// FormatSanity prints the counts as "empty/repeated/short of n", "-" for an
// unknown count or a run without an archive (outputsanity.Format).
func FormatSanity(s *Sanity) string { return outputsanity.Format(s) }
