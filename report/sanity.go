package report

import (
	"github.com/joulemark/joulemark/analyze/outputsanity"
)

// OutputSanity is report.json's output_sanity: the suspicious outputs among
// the successful formal requests, counted from the bench archive's
// requests.jsonl (outputsanity.Counts: requests, empty, repeated, short,
// ignore_eos), with their total and share.
type OutputSanity struct {
	outputsanity.Counts
	// Bad is empty + repeated + short, over the counts that are known.
	Bad int `json:"bad"`
	// BadRatio is Bad / requests, a lower bound when repeated or short is
	// null; null when no successful formal request was found.
	BadRatio *float64 `json:"bad_ratio"`
	// MaxBadRatio is the threshold above which outputs_suspect is raised.
	MaxBadRatio float64 `json:"max_bad_ratio"`
}
