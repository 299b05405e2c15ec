package main

import (
	"github.com/joulemark/joulemark/report"
)

// CostFlags are the money and carbon inputs of analyze, plan and
// production (--cost.*); a figure lacking one of its inputs is left out.
type CostFlags struct {
	PricePerKWh     *float64 `name:"price-per-kwh" placeholder:"PRICE" help:"Energy price per kWh (in --cost.currency): adds cost figures."`
	Currency        string   `name:"currency" placeholder:"CODE" help:"Currency of --cost.price-per-kwh, a label (e.g. EUR)."`
	CarbonIntensity *float64 `name:"carbon-intensity" placeholder:"G_PER_KWH" help:"Grid carbon intensity, gCO2e per kWh: adds emission figures."`
	CarbonQuery     string   `name:"carbon-query" placeholder:"PROMQL" help:"PromQL expression of one live carbon-intensity series (gCO2e/kWh), averaged over the run or range; instead of --cost.carbon-intensity."`
	PUE             *float64 `name:"pue" placeholder:"RATIO" help:"Facility power usage effectiveness (≥ 1), applied to the energy counted; required for any cost or emission figure."`
	Energy          string   `name:"energy" default:"gpu" enum:"gpu,gpu+host" help:"Energy counted: the GPUs' (gpu), or plus the host's RAPL packages and DRAM where measured (gpu+host)."`
}

// Inputs are the flags as analyze's cost inputs, validated.
func (f CostFlags) Inputs() (report.CostInputs, error) {
	in := report.CostInputs{PricePerKWh: f.PricePerKWh, Currency: f.Currency, CarbonIntensity: f.CarbonIntensity,
		CarbonQuery: f.CarbonQuery, PUE: f.PUE, Energy: f.Energy}
	if err := in.Validate(); err != nil {
		return in, usageErrorf("--cost.*: %w", err)
	}
	return in, nil
}
