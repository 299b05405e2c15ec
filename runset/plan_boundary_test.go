package runset

import (
	"testing"

	"github.com/joulemark/joulemark/report"
)

// TestPlanBoundaryFromRuns: a plan built from runs measured on a C2C module
// says its boundary includes the CPU.
func TestPlanBoundaryFromRuns(t *testing.T) {
	for _, tc := range []struct {
		boundary, want string
	}{{report.Boundary, report.Boundary}, {report.BoundaryModule, report.BoundaryModule}} {
		r := &Run{Name: "r", Report: report.Report{Measurement: report.Measurement{Boundary: tc.boundary}}}
		p, _ := MakePlan([]*Run{r}, PlanOptions{TargetPeakRateRPS: 1})
		if p.Boundary != tc.want {
			t.Errorf("runs measured as %q: plan boundary %q", tc.boundary, p.Boundary)
		}
	}
}
