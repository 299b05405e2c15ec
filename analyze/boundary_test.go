package analyze

import "testing"

// TestBoundaryFromMeasuredScope: the report's boundary line says what the
// exporters measured: the GPU board, or a whole C2C module.
func TestBoundaryFromMeasuredScope(t *testing.T) {
	for _, tc := range []struct {
		scopes []string
		want   string
	}{
		{[]string{"gpu", "gpu"}, Boundary},
		{[]string{"", ""}, Boundary}, // exporters before the label
		{[]string{"gpu", "module"}, BoundaryModule},
	} {
		d := synthRun(3000, len(tc.scopes), 600, 2)
		for i := range d.GPUs {
			d.GPUs[i].EnergyScope = tc.scopes[i]
		}
		r, _, err := Compute(d, DefaultParams())
		if err != nil {
			t.Fatal(err)
		}
		if r.Measurement.Boundary != tc.want {
			t.Errorf("scopes %v: boundary %q, want %q", tc.scopes, r.Measurement.Boundary, tc.want)
		}
	}
}
