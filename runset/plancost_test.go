package runset

import (
	"math"
	"strings"
	"testing"

	"github.com/joulemark/joulemark/report"
)

// TestPlanCost: 36 MJ a day (10 kWh) × PUE 1.2 = 12 kWh, at 0.30/kWh 3.60
// and at 250 g/kWh 3000 g; a carbon query or gpu+host leave their
// figures null and say why.
func TestPlanCost(t *testing.T) {
	p := &Plan{EnergyPerDayJoules: f64(3.6e7), Boundary: report.Boundary}
	c := planCost(p, report.CostInputs{PricePerKWh: f64(0.3), Currency: "USD", CarbonIntensity: f64(250), PUE: f64(1.2)})
	for _, x := range []struct {
		name string
		got  *float64
		want float64
	}{{"kWh", c.FacilityKWh, 12}, {"money", c.Money, 3.6}, {"gCO2e", c.GramsCO2e, 3000}} {
		if x.got == nil || math.Abs(*x.got-x.want) > 1e-9 {
			t.Errorf("%s: got %v, want %v", x.name, x.got, x.want)
		}
	}
	if c.Boundary != "GPU board energy only × PUE 1.2" || len(c.Missing) > 0 {
		t.Errorf("boundary %q, missing %v", c.Boundary, c.Missing)
	}
	c = planCost(p, report.CostInputs{PricePerKWh: f64(0.3), CarbonQuery: "grid", PUE: f64(1.2)})
	if c.GramsCO2e != nil || c.Money == nil || len(c.Missing) != 1 || !strings.Contains(c.Missing[0], "constant") {
		t.Errorf("carbon query: gCO2e %v, money %v, missing %v", c.GramsCO2e, c.Money, c.Missing)
	}
	c = planCost(p, report.CostInputs{PricePerKWh: f64(0.3), PUE: f64(1.2), Energy: report.CostEnergyGPUHost})
	if c.Money != nil || c.FacilityKWh != nil {
		t.Errorf("gpu+host: money %v, kWh %v, want null", c.Money, c.FacilityKWh)
	}
	c = planCost(&Plan{Boundary: report.Boundary}, report.CostInputs{PricePerKWh: f64(0.3), PUE: f64(1.2)})
	if c.Money != nil || !strings.Contains(strings.Join(c.Missing, ","), "energy per day") {
		t.Errorf("no energy: money %v, missing %v", c.Money, c.Missing)
	}
}
