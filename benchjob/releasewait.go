package benchjob

import (
	"fmt"
	"strings"
	"time"

	"github.com/joulemark/joulemark/internal/phaseapi"
)

// releaseProgress says what a release wait is waiting for: the criteria
// not met yet with the exporter's reason, or, once all are met, how long
// the hold has lasted of how long it must. An exporter without criteria
// gives its reason alone.
func releaseProgress(rs phaseapi.ReleaseStatus, now time.Time) string {
	var unmet []string
	for _, c := range rs.Criteria {
		if !c.Met {
			s := c.Name
			if c.Reason != "" {
				s += " (" + c.Reason + ")"
			}
			unmet = append(unmet, s)
		}
	}
	switch {
	case len(unmet) > 0:
		return "criterion not met: " + strings.Join(unmet, "; ")
	case rs.HoldStart != nil:
		held := now.Sub(time.Unix(0, int64(*rs.HoldStart*1e9))).Round(time.Second)
		return fmt.Sprintf("every criterion met; held %s of %s", max(held, 0), time.Duration(rs.HoldSec*float64(time.Second)).Round(time.Second))
	case rs.Reason != "":
		return rs.Reason
	}
	return "release state " + rs.State
}
