package analyze

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/joulemark/joulemark/internal/secretfile"
	"github.com/joulemark/joulemark/internal/stats"
	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/config"
	"github.com/prometheus/common/model"
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

// AddCost adds the cost section to the report from the inputs; carbon is
// the intensity (the constant, or the query's average over the run; nil
// when neither). Nothing is added when no input is given.
func AddCost(r *Report, in CostInputs, carbon *float64) {
	if !in.Set() {
		return
	}
	c := &Cost{Energy: in.Energy, PUE: in.PUE, PricePerKWh: in.PricePerKWh, Currency: in.Currency, CarbonGramsPerKWh: carbon}
	if c.Energy == "" {
		c.Energy = CostEnergyGPU
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
	if c.Energy == CostEnergyGPUHost {
		energy += " + " + HostBoundary
		if h := r.HostEnergy; h != nil && h.Available {
			run, ss, life = sumPtr(run, h.LifecycleJoules), h.GPUPlusHostSteadyStateJoulesPerToken, h.GPUPlusHostFullLifecycleJoulesPerToken
		} else {
			run, ss, life = nil, nil, nil
			c.Missing = append(c.Missing, "host energy (not measured for this run)")
		}
	}
	c.Boundary = CostBoundary(energy, in.PUE)
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

// CarbonOverRun is the carbon intensity for the run: the constant, or the
// query's average from the report's first stage start to its last stage
// end; nil when neither is given or the query has no sample there.
func CarbonOverRun(ctx context.Context, cfg Config, r *Report) (*float64, error) {
	in := cfg.Cost
	if in.CarbonQuery == "" {
		return in.CarbonIntensity, nil
	}
	from, to := math.Inf(1), math.Inf(-1)
	for _, st := range r.Stages {
		from, to = min(from, st.Start), max(to, st.End)
	}
	if !(to > from) {
		return nil, nil
	}
	hc, err := config.NewClientFromConfig(cfg.HTTP, "joulemark-analyze")
	if err != nil {
		return nil, fmt.Errorf("prometheus HTTP client: %w", err)
	}
	client, err := api.NewClient(api.Config{Address: cfg.PrometheusURL, Client: limitClient(hc, cfg.maxResponse)})
	if err != nil {
		return nil, fmt.Errorf("prometheus client for %s: %w", secretfile.RedactURL(cfg.PrometheusURL), err)
	}
	return AverageOver(ctx, v1.NewAPI(client), in.CarbonQuery, from, to)
}

// AverageOver is the time average of a one-series PromQL expression over
// [from, to] (a subquery at 1/100 of the span, at least 1 s); nil when it
// has no sample there. More than one series is an error: which one counts
// would be a guess.
func AverageOver(ctx context.Context, a v1.API, expr string, from, to float64) (*float64, error) {
	span := time.Duration((to - from) * float64(time.Second)).Round(time.Second)
	step := max(time.Second, (span / 100).Round(time.Second))
	q := fmt.Sprintf("avg_over_time((%s)[%s:%s])", expr, model.Duration(max(span, time.Second)), model.Duration(step))
	v, _, _, err := a.Query(ctx, q, time.UnixMilli(int64(to*1000)))
	if err != nil {
		return nil, fmt.Errorf("carbon intensity query %s: %w", q, err)
	}
	vec, ok := v.(model.Vector)
	if !ok {
		return nil, fmt.Errorf("carbon intensity query %s: got a %s, want an instant vector", q, v.Type())
	}
	switch len(vec) {
	case 0:
		return nil, nil
	case 1:
		return stats.Finite(float64(vec[0].Value)), nil
	}
	return nil, fmt.Errorf("carbon intensity query %s: %d series, want one (aggregate it, e.g. avg(...))", q, len(vec))
}

// costMarkdown is report.md's "Cost and carbon" section.
func costMarkdown(p func(string, ...any), r *Report) {
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
		f    CostFigures
	}{{"per run (lifecycle)", c.PerRun}, {"per 1M output tokens, steady state", c.Per1MOutputTokensSteady}, {"per 1M output tokens, full lifecycle", c.Per1MOutputTokensLifecycle}} {
		p("| %s | %s | %s | %s |\n", row.name, num(row.f.FacilityKWh, "%.4g kWh"), num(row.f.Money, "%.4g"), num(row.f.GramsCO2e, "%.4g gCO2e"))
	}
	p("\n")
}
