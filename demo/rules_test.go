package demo

import (
	"strings"
	"testing"

	"github.com/joulemark/joulemark/internal/contract"
	"github.com/joulemark/joulemark/report"
)

// The cost inputs become constant recording rules, only those given; no
// input, no rule file (the cost rules then record nothing, never 0).
func TestCostInputRules(t *testing.T) {
	if got := costInputRules(report.CostInputs{}); got != nil {
		t.Errorf("no inputs: %d rule files, want none", len(got))
	}
	pue, price := 1.3, 0.25
	got := costInputRules(report.CostInputs{PUE: &pue, PricePerKWh: &price})
	if len(got) != 1 {
		t.Fatalf("%d rule files, want 1", len(got))
	}
	y := string(got[0].YAML)
	for _, want := range []string{"record: " + contract.CostPUE + "\n        expr: vector(1.3)", "record: " + contract.CostPricePerKWh + "\n        expr: vector(0.25)"} {
		if !strings.Contains(y, want) {
			t.Errorf("rules:\n%s\nwant %q", y, want)
		}
	}
	if strings.Contains(y, contract.CostCarbonIntensity) {
		t.Errorf("rules:\n%s\nname the carbon intensity, which was not given", y)
	}
}
