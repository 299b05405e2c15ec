package analyze

import (
	"fmt"
	"strings"

	"github.com/joulemark/joulemark/internal/contract"
	"github.com/joulemark/joulemark/report"
)

// addOutputSanity puts the counts into the report and raises the
// non-excluding outputs_suspect flag when their share of bad outputs is above
// maxBadRatio.
func addOutputSanity(r *report.Report, c report.OutputCounts, maxBadRatio float64) {
	bad, _ := c.Bad()
	s := &report.OutputSanity{OutputCounts: c, Bad: bad, BadRatio: c.BadRatio(), MaxBadRatio: maxBadRatio}
	r.OutputSanity = s
	if s.BadRatio == nil || *s.BadRatio <= maxBadRatio {
		return
	}
	var parts []string
	add := func(name string, n *int) {
		if n != nil && *n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", *n, name))
		}
	}
	add("empty", &c.Empty)
	add("repeated", c.Repeated)
	add("short", c.Short)
	add("with more tokens than their text holds", c.TokensOverText)
	msg := fmt.Sprintf("%d of %d successful formal outputs (%.2f%%) are suspect (%s), above the %g%% threshold (--max-bad-output-ratio)",
		bad, c.Requests, 100**s.BadRatio, strings.Join(parts, ", "), 100*maxBadRatio)
	r.Flags = append(r.Flags, report.Flag{Code: contract.FlagOutputsSuspect, Message: msg})
}

// sanityCell renders output_sanity for the Energy per token table:
// "empty / repeated / short of n (x% bad)", "—" for an unknown count.
func sanityCell(s *report.OutputSanity) string {
	opt := func(p *int) string {
		if p == nil {
			return "—"
		}
		return fmt.Sprint(*p)
	}
	v := fmt.Sprintf("%d / %s / %s of %d", s.Empty, opt(s.Repeated), opt(s.Short), s.Requests)
	if s.BadRatio != nil {
		bound := ""
		if _, known := s.OutputCounts.Bad(); !known {
			bound = "≥ "
		}
		v += fmt.Sprintf(" (%s%.2f%% bad)", bound, 100**s.BadRatio)
	}
	return v
}
