package choose

import (
	"testing"

	"github.com/joulemark/joulemark/analyze"
)

// TestPlanBoundaryFromRuns: a plan built from runs measured on a C2C module
// says its boundary includes the CPU.
func TestPlanBoundaryFromRuns(t *testing.T) {
	for _, tc := range []struct {
		boundary, want string
	}{{analyze.Boundary, analyze.Boundary}, {analyze.BoundaryModule, analyze.BoundaryModule}} {
		r := &Run{Name: "r", Report: analyze.Report{Measurement: analyze.Measurement{Boundary: tc.boundary}}}
		p, _ := MakePlan([]*Run{r}, PlanOptions{TargetPeakRateRPS: 1})
		if p.Boundary != tc.want {
			t.Errorf("runs measured as %q: plan boundary %q", tc.boundary, p.Boundary)
		}
	}
}
