package analyze

import (
	"strconv"
	"strings"

	"github.com/joulemark/joulemark/report"
)

// addCost adds the cost section to the report from the inputs; carbon is
// the intensity (the constant, or the query's average over the run; nil
// when neither). Nothing is added when no input is given.
func addCost(r *report.Report, in report.CostInputs, carbon *float64) {
	if !in.Set() {
		return
	}
	c := &report.Cost{Energy: in.Energy, PUE: in.PUE, PricePerKWh: in.PricePerKWh, Currency: in.Currency, CarbonGramsPerKWh: carbon}
	if c.Energy == "" {
		c.Energy = report.CostEnergyGPU
	}
	switch {
	case in.CarbonQuery != "":
		c.CarbonSource = in.CarbonQuery
	case in.CarbonIntensity != nil:
		c.CarbonSource = "constant"
	}
	run, ss, life := r.Energy.LifecycleJoules, r.SteadyState.JoulesPerToken, r.FullLifecycleJoulesPerToken
	if !r.SteadyState.Reached {
		ss = nil
	}
	energy := r.Measurement.Boundary
	if c.Energy == report.CostEnergyGPUHost {
		energy += " + " + report.HostBoundary
		if h := r.HostEnergy; h != nil && h.Available {
			run, ss, life = sumPtr(run, h.LifecycleJoules), h.GPUPlusHostSteadyStateJoulesPerToken, h.GPUPlusHostFullLifecycleJoulesPerToken
		} else {
			run, ss, life = nil, nil, nil
			c.Missing = append(c.Missing, "host energy (not measured for this run)")
		}
	}
	c.Boundary = report.CostBoundary(energy, in.PUE)
	if in.PUE == nil {
		c.Missing = append(c.Missing, "PUE")
	}
	if in.PricePerKWh == nil {
		c.Missing = append(c.Missing, "price per kWh")
	}
	if carbon == nil {
		c.Missing = append(c.Missing, "carbon intensity")
	}
	c.PerRun = in.Figures(run, carbon)
	c.Per1MOutputTokensSteady = in.Figures(scaledPtr(ss, 1e6), carbon)
	c.Per1MOutputTokensLifecycle = in.Figures(scaledPtr(life, 1e6), carbon)
	r.Cost = c
}

func scaledPtr(p *float64, k float64) *float64 {
	if p == nil {
		return nil
	}
	return new(*p * k)
}

// costMarkdown is report.md's "Cost and carbon" section.
func costMarkdown(p func(string, ...any), r *report.Report) {
	c := r.Cost
	if c == nil {
		return
	}
	p("## Cost and carbon\n\n")
	price := "—"
	if c.PricePerKWh != nil {
		price = strconv.FormatFloat(*c.PricePerKWh, 'g', -1, 64) + " " + orDash(c.Currency) + "/kWh"
	}
	src := ""
	if c.CarbonSource != "" && c.CarbonSource != "constant" {
		src = " (average of `" + mdEscape(c.CarbonSource) + "` over the run)"
	}
	p("Boundary: %s. Price %s; carbon intensity %s%s.\n\n", c.Boundary, price, num(c.CarbonGramsPerKWh, "%.1f gCO2e/kWh"), src)
	if len(c.Missing) > 0 {
		p("Missing (their figures are null): %s.\n\n", mdEscape(strings.Join(c.Missing, ", ")))
	}
	cur := orDash(c.Currency)
	p("| | facility energy | cost (%s) | emissions |\n|---|---:|---:|---:|\n", cur)
	for _, row := range []struct {
		name string
		f    report.CostFigures
	}{{"per run (lifecycle)", c.PerRun}, {"per 1M output tokens, steady state", c.Per1MOutputTokensSteady}, {"per 1M output tokens, full lifecycle", c.Per1MOutputTokensLifecycle}} {
		p("| %s | %s | %s | %s |\n", row.name, num(row.f.FacilityKWh, "%.4g kWh"), num(row.f.Money, "%.4g"), num(row.f.GramsCO2e, "%.4g gCO2e"))
	}
	p("\n")
}
