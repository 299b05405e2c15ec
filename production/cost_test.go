package production

import (
	"math"
	"strings"
	"testing"

	"github.com/joulemark/joulemark/report"
)

func f(v float64) *float64 { return &v }

// TestProductionCost: by hand, a model of 3.6 MJ (1 kWh) and 1M tokens
// over two namespaces of half each, at PUE 2, 0.10/kWh and 500 g/kWh:
// model 2 kWh, 0.20, 1000 g, and the same per 1M output tokens; each
// namespace 1 kWh, 0.10, 500 g.
func TestProductionCost(t *testing.T) {
	r := &Report{Boundary: report.Boundary,
		Models: []ModelFigures{{Model: "m", EnergyJoules: 3.6e6, OutputTokens: 1e6}},
		Pods: []PodFigures{{Namespace: "b", Pod: "p2", Model: "m", EnergyJoules: 1.8e6, OutputTokens: 5e5},
			{Namespace: "a", Pod: "p1", Model: "m", EnergyJoules: 1.8e6, OutputTokens: 5e5}}}
	AddCost(r, report.CostInputs{PricePerKWh: f(0.1), CarbonIntensity: f(500), PUE: f(2)}, f(500))
	c := r.Cost
	want := func(what string, got *float64, v float64) {
		t.Helper()
		if got == nil || math.Abs(*got-v) > 1e-9 {
			t.Errorf("%s: got %v, want %v", what, got, v)
		}
	}
	want("model kWh", c.Models[0].FacilityKWh, 2)
	want("model money", c.Models[0].Money, 0.2)
	want("model gCO2e", c.Models[0].GramsCO2e, 1000)
	want("model money per 1M", c.Models[0].Per1MOutputTokens.Money, 0.2)
	if len(c.Namespaces) != 2 || c.Namespaces[0].Name != "a" {
		t.Fatalf("namespaces %+v", c.Namespaces)
	}
	want("namespace a money", c.Namespaces[0].Money, 0.1)
	want("namespace b gCO2e", c.Namespaces[1].GramsCO2e, 500)
	if c.Boundary != "GPU board energy only × PUE 2" || len(c.Missing) > 0 {
		t.Errorf("boundary %q, missing %v", c.Boundary, c.Missing)
	}
	var md strings.Builder
	if err := WriteMarkdown(&md, r); err != nil || !strings.Contains(md.String(), "× PUE 2") {
		t.Errorf("markdown lacks the boundary (%v):\n%s", err, md.String())
	}

	AddCost(r, report.CostInputs{PricePerKWh: f(0.1)}, nil)
	if r.Cost.Models[0].Money != nil || strings.Join(r.Cost.Missing, ",") != "PUE,carbon intensity" {
		t.Errorf("without PUE: money %v, missing %v", r.Cost.Models[0].Money, r.Cost.Missing)
	}
	AddCost(r, report.CostInputs{PricePerKWh: f(0.1), PUE: f(2), Energy: report.CostEnergyGPUHost}, nil)
	if r.Cost.Namespaces[0].Money != nil {
		t.Errorf("gpu+host: money %v, want null (no per-pod host energy)", *r.Cost.Namespaces[0].Money)
	}
	r.Cost = nil
	AddCost(r, report.CostInputs{}, nil)
	if r.Cost != nil {
		t.Error("no inputs: a cost section")
	}
}
