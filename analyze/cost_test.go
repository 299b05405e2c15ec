package analyze

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/joulemark/joulemark/report"
)

// costReport is a run of 7.2 MJ (2 kWh) over its lifecycle, 0.36 J/token
// in steady state and 0.72 J/token over the lifecycle.
func costReport() *report.Report {
	r := &report.Report{}
	r.Measurement.Boundary = report.Boundary
	r.Energy.LifecycleJoules = new(7.2e6)
	r.SteadyState.Reached, r.SteadyState.JoulesPerToken = true, new(0.36)
	r.FullLifecycleJoulesPerToken = new(0.72)
	return r
}

func costNear(t *testing.T, what string, got *float64, want float64) {
	t.Helper()
	if got == nil || math.Abs(*got-want) > 1e-9*math.Max(1, want) {
		t.Errorf("%s: got %v, want %v", what, deref(got), want)
	}
}

func isNil(t *testing.T, what string, got *float64) {
	t.Helper()
	if got != nil {
		t.Errorf("%s: got %v, want null", what, *got)
	}
}

func deref(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}

// TestCostFixture: figures computed by hand. 2 kWh × PUE 1.5 = 3 kWh at
// 0.20/kWh = 0.60 and 400 g/kWh = 1200 g; 1M tokens at 0.36 J = 0.1 kWh
// → 0.15 kWh → 0.03 and 60 g; at 0.72 J → 0.3 kWh → 0.06 and 120 g.
func TestCostFixture(t *testing.T) {
	r := costReport()
	addCost(r, report.CostInputs{PricePerKWh: new(0.2), Currency: "EUR", CarbonIntensity: new(400.0), PUE: new(1.5)}, new(400.0))
	c := r.Cost
	if c.Boundary != "GPU board energy only × PUE 1.5" || len(c.Missing) != 0 || c.CarbonSource != "constant" {
		t.Errorf("boundary %q, missing %v, source %q", c.Boundary, c.Missing, c.CarbonSource)
	}
	costNear(t, "run kWh", c.PerRun.FacilityKWh, 3)
	costNear(t, "run money", c.PerRun.Money, 0.6)
	costNear(t, "run gCO2e", c.PerRun.GramsCO2e, 1200)
	costNear(t, "steady money", c.Per1MOutputTokensSteady.Money, 0.03)
	costNear(t, "steady gCO2e", c.Per1MOutputTokensSteady.GramsCO2e, 60)
	costNear(t, "lifecycle money", c.Per1MOutputTokensLifecycle.Money, 0.06)
	costNear(t, "lifecycle gCO2e", c.Per1MOutputTokensLifecycle.GramsCO2e, 120)
}

// TestCostMissingInputs: a figure lacking an input is null, never 0, and
// the section says what is missing; no input at all: no section.
func TestCostMissingInputs(t *testing.T) {
	r := costReport()
	addCost(r, report.CostInputs{}, nil)
	if r.Cost != nil {
		t.Fatalf("no inputs: cost section %+v, want none", r.Cost)
	}
	addCost(r, report.CostInputs{PricePerKWh: new(0.2), PUE: new(1.5)}, nil)
	costNear(t, "money without carbon", r.Cost.PerRun.Money, 0.6)
	isNil(t, "carbon without intensity", r.Cost.PerRun.GramsCO2e)
	if fmt.Sprint(r.Cost.Missing) != "[carbon intensity]" {
		t.Errorf("missing %v", r.Cost.Missing)
	}
	r = costReport()
	addCost(r, report.CostInputs{PricePerKWh: new(0.2), CarbonIntensity: new(400.0)}, new(400.0))
	isNil(t, "money without PUE", r.Cost.PerRun.Money)
	isNil(t, "carbon without PUE", r.Cost.Per1MOutputTokensSteady.GramsCO2e)
	if !strings.Contains(r.Cost.Boundary, "PUE (not given)") {
		t.Errorf("boundary %q does not say the PUE is missing", r.Cost.Boundary)
	}
	r = costReport()
	r.SteadyState.Reached = false
	addCost(r, report.CostInputs{PricePerKWh: new(0.2), PUE: new(1.5)}, nil)
	isNil(t, "steady state not reached", r.Cost.Per1MOutputTokensSteady.Money)
}

// TestCostGPUPlusHost: the host's energy is added where measured (1 kWh
// more: 3 kWh × 1.5 = 4.5 kWh); where not, every figure is null.
func TestCostGPUPlusHost(t *testing.T) {
	in := report.CostInputs{PricePerKWh: new(0.2), PUE: new(1.5), Energy: report.CostEnergyGPUHost}
	r := costReport()
	addCost(r, in, nil)
	isNil(t, "run without host energy", r.Cost.PerRun.FacilityKWh)
	if len(r.Cost.Missing) == 0 || !strings.Contains(r.Cost.Missing[0], "host energy") {
		t.Errorf("missing %v", r.Cost.Missing)
	}
	r = costReport()
	r.HostEnergy = &report.HostEnergy{Available: true, LifecycleJoules: new(3.6e6), GPUPlusHostSteadyStateJoulesPerToken: new(0.54),
		GPUPlusHostFullLifecycleJoulesPerToken: new(1.08)}
	addCost(r, in, nil)
	costNear(t, "run kWh", r.Cost.PerRun.FacilityKWh, 4.5)
	costNear(t, "steady money", r.Cost.Per1MOutputTokensSteady.Money, 0.045)
	if !strings.HasPrefix(r.Cost.Boundary, report.Boundary+" + host CPU packages") || !strings.HasSuffix(r.Cost.Boundary, "× PUE 1.5") {
		t.Errorf("boundary %q", r.Cost.Boundary)
	}
}

func TestCostInputsValidate(t *testing.T) {
	for _, in := range []report.CostInputs{{PUE: new(0.9)}, {PricePerKWh: new(-1.0)}, {CarbonIntensity: new(1.0), CarbonQuery: "x"},
		{Energy: "host"}, {PUE: new(math.Inf(1))}} {
		if in.Validate() == nil {
			t.Errorf("%+v accepted", in)
		}
	}
}
