package report

import (
	"errors"
	"fmt"
	"math"
	"strconv"
)

// Energy bases of CostInputs.Energy.
const (
	CostEnergyGPU     = "gpu"      // the GPUs' energy (the report's boundary)
	CostEnergyGPUHost = "gpu+host" // plus the host's RAPL packages and DRAM, where measured
)

// joulesPerKWh converts joules to kilowatt-hours.
const joulesPerKWh = 3.6e6

// CostInputs are the money and carbon inputs. A figure needs every input
// it depends on: money the price and the PUE, carbon the intensity and the
// PUE; without them it is null, never 0.
type CostInputs struct {
	PricePerKWh *float64 // energy price per kWh, in Currency
	Currency    string   // e.g. EUR; a label only
	// CarbonIntensity is the grid's gCO2e per kWh, a constant; or
	// CarbonQuery, a PromQL expression of one series in gCO2e/kWh,
	// averaged over the run (Analyze) or the range (production).
	CarbonIntensity *float64
	CarbonQuery     string
	PUE             *float64 // facility power usage effectiveness, ≥ 1
	Energy          string   // CostEnergyGPU (default) or CostEnergyGPUHost
}

// Set says whether any input is given (else there is no cost section).
func (in CostInputs) Set() bool {
	return in.PricePerKWh != nil || in.CarbonIntensity != nil || in.CarbonQuery != "" || in.PUE != nil
}

// Validate checks the inputs before any work starts.
func (in CostInputs) Validate() error {
	switch {
	case in.PricePerKWh != nil && !(*in.PricePerKWh >= 0 && !math.IsInf(*in.PricePerKWh, 0)):
		return fmt.Errorf("energy price per kWh must be a finite number ≥ 0, got %v", *in.PricePerKWh)
	case in.CarbonIntensity != nil && !(*in.CarbonIntensity >= 0 && !math.IsInf(*in.CarbonIntensity, 0)):
		return fmt.Errorf("carbon intensity must be a finite number of gCO2e/kWh ≥ 0, got %v", *in.CarbonIntensity)
	case in.CarbonIntensity != nil && in.CarbonQuery != "":
		return errors.New("give the carbon intensity as a constant or as a PromQL expression, not both")
	case in.PUE != nil && !(*in.PUE >= 1 && !math.IsInf(*in.PUE, 0)):
		return fmt.Errorf("PUE must be a finite number ≥ 1, got %v", *in.PUE)
	case in.Energy != "" && in.Energy != CostEnergyGPU && in.Energy != CostEnergyGPUHost:
		return fmt.Errorf("cost energy %q: want %s or %s", in.Energy, CostEnergyGPU, CostEnergyGPUHost)
	}
	return nil
}

// Cost is report.json "cost": what the run's energy costs and emits,
// within Boundary. Absent when no cost input was given.
type Cost struct {
	// Boundary is the energy counted and the PUE applied, e.g. "GPU board
	// energy only × PUE 1.3"; every figure below is within it.
	Boundary          string   `json:"boundary"`
	Energy            string   `json:"energy"` // gpu, gpu+host
	PUE               *float64 `json:"pue"`
	PricePerKWh       *float64 `json:"price_per_kwh"`
	Currency          string   `json:"currency,omitempty"`
	CarbonGramsPerKWh *float64 `json:"carbon_gco2e_per_kwh"`
	CarbonSource      string   `json:"carbon_source,omitempty"` // "constant" or the PromQL expression
	// Missing names the inputs or energies a null figure lacks.
	Missing []string `json:"missing,omitempty"`
	// PerRun is the lifecycle (startup + formal + release); the per-1M
	// figures are for 1M output tokens at the steady-state and the
	// full-lifecycle J/token.
	PerRun                     CostFigures `json:"per_run"`
	Per1MOutputTokensSteady    CostFigures `json:"per_1m_output_tokens_steady_state"`
	Per1MOutputTokensLifecycle CostFigures `json:"per_1m_output_tokens_full_lifecycle"`
}

// CostBasis is what a priced section of the production report and the
// plan states before its figures: the boundary, the inputs priced with,
// and the inputs a null figure lacks.
type CostBasis struct {
	Boundary          string   `json:"boundary"`
	PUE               *float64 `json:"pue"`
	PricePerKWh       *float64 `json:"price_per_kwh"`
	Currency          string   `json:"currency,omitempty"`
	CarbonGramsPerKWh *float64 `json:"carbon_gco2e_per_kwh"`
	CarbonSource      string   `json:"carbon_source,omitempty"` // "constant" or the PromQL expression
	Missing           []string `json:"missing,omitempty"`
}

// NewCostBasis is the basis of energy within energyBoundary priced with
// in at the carbon intensity carbon (nil: none); Missing is the caller's.
func NewCostBasis(energyBoundary string, in CostInputs, carbon *float64) CostBasis {
	return CostBasis{Boundary: CostBoundary(energyBoundary, in.PUE), PUE: in.PUE, PricePerKWh: in.PricePerKWh,
		Currency: in.Currency, CarbonGramsPerKWh: carbon}
}

// CostFigures are one amount of energy at the facility (× PUE), its
// price and its emissions.
type CostFigures struct {
	FacilityKWh *float64 `json:"facility_kwh"`
	Money       *float64 `json:"money"`
	GramsCO2e   *float64 `json:"gco2e"`
}

// CostBoundary is the boundary string of a cost figure: the energy
// counted × the PUE.
func CostBoundary(energyBoundary string, pue *float64) string {
	if pue == nil {
		return energyBoundary + " × PUE (not given)"
	}
	return energyBoundary + " × PUE " + strconv.FormatFloat(*pue, 'g', -1, 64)
}

// Figures prices joules of energy measured within the boundary.
func (in CostInputs) Figures(joules *float64, carbon *float64) CostFigures {
	var f CostFigures
	if joules == nil || in.PUE == nil {
		return f
	}
	kwh := *joules / joulesPerKWh * *in.PUE
	f.FacilityKWh = &kwh
	if in.PricePerKWh != nil {
		f.Money = new(kwh * *in.PricePerKWh)
	}
	if carbon != nil {
		f.GramsCO2e = new(kwh * *carbon)
	}
	return f
}
