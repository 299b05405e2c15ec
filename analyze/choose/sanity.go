package choose

import (
	"io"

	"github.com/joulemark/joulemark/analyze/outputsanity"
)

// Sanity counts the outputs of a run's successful formal requests that say
// the model or engine broke: empty, repeated and short outputs. It is
// outputsanity.Counts, which analyze also puts in the report.
type Sanity = outputsanity.Counts

// ReadSanity reads a requests.jsonl archive and counts the suspicious
// outputs among successful formal requests (outputsanity.Read).
func ReadSanity(r io.Reader) (Sanity, error) { return outputsanity.Read(r) }

// FormatSanity prints the counts as "empty/repeated/short of n", "-" for an
// unknown count or a run without an archive (outputsanity.Format).
func FormatSanity(s *Sanity) string { return outputsanity.Format(s) }
