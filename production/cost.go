package production

import (
	"cmp"
	"slices"
	"strings"

	"github.com/joulemark/joulemark/report"
)

// Cost is report.json "cost": what each model's and each namespace's
// energy over the range costs and emits, within Boundary. Only with cost
// inputs; a figure lacking an input is null.
type Cost struct {
	report.CostBasis
	Models     []Priced `json:"models"`
	Namespaces []Priced `json:"namespaces"`
}

// Priced is one model's or namespace's energy priced, and per 1M output
// tokens where it generated any.
type Priced struct {
	Name string `json:"name"`
	report.CostFigures
	Per1MOutputTokens *report.CostFigures `json:"per_1m_output_tokens,omitempty"`
}

// AddCost prices the report's models and namespaces; carbon is the
// intensity over the range (nil: none). Pods' energy is the GPUs' only:
// gpu+host leaves every figure null.
func AddCost(r *Report, in report.CostInputs, carbon *float64) {
	if !in.Set() {
		return
	}
	c := &Cost{CostBasis: report.NewCostBasis(r.Boundary, in, carbon), Models: []Priced{}, Namespaces: []Priced{}}
	switch {
	case in.CarbonQuery != "":
		c.CarbonSource = in.CarbonQuery
	case in.CarbonIntensity != nil:
		c.CarbonSource = "constant"
	}
	host := in.Energy == report.CostEnergyGPUHost
	if host {
		c.Missing = append(c.Missing, "host energy (per-pod energy is the GPUs' only)")
	}
	for what, ok := range map[string]bool{"PUE": in.PUE != nil, "price per kWh": in.PricePerKWh != nil, "carbon intensity": carbon != nil} {
		if !ok {
			c.Missing = append(c.Missing, what)
		}
	}
	slices.Sort(c.Missing)
	price := func(name string, joules, tokens float64) Priced {
		p := Priced{Name: name}
		if host {
			return p
		}
		p.CostFigures = in.Figures(&joules, carbon)
		if tokens > 0 {
			f := in.Figures(new(joules/tokens*1e6), carbon)
			p.Per1MOutputTokens = &f
		}
		return p
	}
	for _, m := range r.Models {
		c.Models = append(c.Models, price(m.Model, m.EnergyJoules, m.OutputTokens))
	}
	type acc struct{ joules, tokens float64 }
	byNS := map[string]*acc{}
	for _, p := range r.Pods {
		a := byNS[p.Namespace]
		if a == nil {
			a = &acc{}
			byNS[p.Namespace] = a
		}
		a.joules += p.EnergyJoules
		a.tokens += p.OutputTokens
	}
	for ns, a := range byNS {
		c.Namespaces = append(c.Namespaces, price(ns, a.joules, a.tokens))
	}
	slices.SortFunc(c.Namespaces, func(a, b Priced) int { return cmp.Compare(a.Name, b.Name) })
	r.Cost = c
}

// costMarkdown is report.md's "Cost and carbon" section.
func costMarkdown(p func(string, ...any), r *Report) {
	c := r.Cost
	if c == nil {
		return
	}
	p("\n## Cost and carbon\n\nBoundary: %s; price %s %s/kWh; carbon intensity %s gCO2e/kWh", c.Boundary, opt(c.PricePerKWh, "%g"), or(c.Currency, ""), opt(c.CarbonGramsPerKWh, "%.1f"))
	if c.CarbonSource != "" && c.CarbonSource != "constant" {
		p(" (average of `%s` over the range)", c.CarbonSource)
	}
	p(".\n\n")
	if len(c.Missing) > 0 {
		p("Missing (their figures are null): %s.\n\n", strings.Join(c.Missing, ", "))
	}
	p("| | name | facility kWh | cost | gCO2e | cost per 1M output tokens | gCO2e per 1M output tokens |\n|---|---|---|---|---|---|---|\n")
	for _, g := range []struct {
		kind string
		rows []Priced
	}{{"model", c.Models}, {"namespace", c.Namespaces}} {
		for _, x := range g.rows {
			per := [2]string{"–", "–"}
			if x.Per1MOutputTokens != nil {
				per = [2]string{opt(x.Per1MOutputTokens.Money, "%.4g"), opt(x.Per1MOutputTokens.GramsCO2e, "%.4g")}
			}
			p("| %s | %s | %s | %s | %s | %s | %s |\n", g.kind, x.Name, opt(x.FacilityKWh, "%.4g"), opt(x.Money, "%.4g"), opt(x.GramsCO2e, "%.4g"), per[0], per[1])
		}
	}
}
