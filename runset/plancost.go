package runset

import (
	"fmt"
	"io"

	"github.com/joulemark/joulemark/report"
)

// PlanCost is plan.json "cost_per_day": what the energy of a day at the
// peak rate costs and emits, within Boundary.
type PlanCost struct {
	report.CostBasis
	report.CostFigures
}

// planCost prices the plan's energy per day. The plan counts the GPUs'
// energy of the admission run; a carbon query needs a run's time range,
// which a plan has not.
func planCost(p *Plan, in report.CostInputs) *PlanCost {
	c := &PlanCost{CostBasis: report.NewCostBasis(p.Boundary, in, in.CarbonIntensity)}
	energy := p.EnergyPerDayJoules
	if in.Energy == report.CostEnergyGPUHost {
		energy = nil
		c.Missing = append(c.Missing, "host energy (a plan counts the GPUs' energy only)")
	}
	if in.PUE == nil {
		c.Missing = append(c.Missing, "PUE")
	}
	if in.PricePerKWh == nil {
		c.Missing = append(c.Missing, "price per kWh")
	}
	if in.CarbonIntensity == nil {
		why := "carbon intensity"
		if in.CarbonQuery != "" {
			why += " (a plan takes a constant, --cost.carbon-intensity)"
		}
		c.Missing = append(c.Missing, why)
	}
	if energy == nil && p.EnergyPerDayJoules == nil {
		c.Missing = append(c.Missing, "energy per day")
	}
	c.CostFigures = in.Figures(energy, in.CarbonIntensity)
	return c
}

// writePlanCost prints the cost line of the plan.
func writePlanCost(w io.Writer, c *PlanCost) {
	if c == nil {
		return
	}
	fmt.Fprintf(w, "cost per day: %s kWh at the facility, %s %s, %s gCO2e; within %s",
		fmtp(c.FacilityKWh), fmtp(c.Money), c.Currency, fmtp(c.GramsCO2e), c.Boundary)
	if len(c.Missing) > 0 {
		fmt.Fprintf(w, " (missing: %v)", c.Missing)
	}
	fmt.Fprintln(w)
}
