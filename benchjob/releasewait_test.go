package benchjob

import (
	"testing"
	"time"

	"github.com/joulemark/joulemark/internal/phaseapi"
)

func TestReleaseProgress(t *testing.T) {
	now := time.Unix(1000, 0)
	since := 988.0
	for _, tc := range []struct {
		rs   phaseapi.ReleaseStatus
		want string
	}{
		{phaseapi.ReleaseStatus{HoldSec: 20, Criteria: []phaseapi.ReleaseCriterion{
			{Name: phaseapi.CriterionProcess, Met: true},
			{Name: phaseapi.CriterionPower, Reason: "gpu 0 at 73.6 W, baseline 70.1 W"}}},
			"criterion not met: power (gpu 0 at 73.6 W, baseline 70.1 W)"},
		{phaseapi.ReleaseStatus{HoldSec: 20, HoldStart: &since, Reason: "gpu 0 at 73.6 W, baseline 70.1 W", Criteria: []phaseapi.ReleaseCriterion{
			{Name: phaseapi.CriterionProcess, Met: true}, {Name: phaseapi.CriterionPower, Met: true}}},
			"every criterion met; held 12s of 20s"},
		{phaseapi.ReleaseStatus{Reason: "power 80 W"}, "power 80 W"},
	} {
		if got := releaseProgress(tc.rs, now); got != tc.want {
			t.Errorf("releaseProgress = %q, want %q", got, tc.want)
		}
	}
}
