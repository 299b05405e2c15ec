package analyze

import (
	"strings"
	"testing"

	"github.com/joulemark/joulemark/report"
)

// TestBoundaryFromMeasuredScope: the report's boundary line says what the
// exporters measured: the GPU board, or a whole C2C module.
func TestBoundaryFromMeasuredScope(t *testing.T) {
	for _, tc := range []struct {
		scopes []string
		want   string
	}{
		{[]string{"gpu", "gpu"}, report.Boundary},
		{[]string{"", ""}, report.Boundary}, // exporters before the label
		{[]string{"gpu", "module"}, report.BoundaryModule},
	} {
		d := synthRun(3000, len(tc.scopes), 600, 2)
		for i := range d.GPUs {
			d.GPUs[i].EnergyScope = tc.scopes[i]
		}
		r, _, err := computeSeries(d, DefaultParams())
		if err != nil {
			t.Fatal(err)
		}
		if r.Measurement.Boundary != tc.want {
			t.Errorf("scopes %v: boundary %q, want %q", tc.scopes, r.Measurement.Boundary, tc.want)
		}
	}
}

// TestReleaseClosedBy: the report says which release criterion closed the
// release last, and when.
func TestReleaseClosedBy(t *testing.T) {
	d := synthRun(3000, 2, 600, 2)
	at := d.Phases["release"].End
	d.ReleaseClosedBy, d.ReleaseClosedAt = "memory", &at
	r, _, err := computeSeries(d, DefaultParams())
	if err != nil {
		t.Fatal(err)
	}
	if !r.Release.Closed || r.Release.ClosedBy != "memory" || r.Release.ClosedByAt == nil || *r.Release.ClosedByAt != at {
		t.Errorf("release %+v", r.Release)
	}
	var md strings.Builder
	if err := WriteMarkdown(&md, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "the memory criterion was met last") {
		t.Errorf("markdown lacks the closing criterion")
	}
}
