package demo

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/joulemark/joulemark/internal/contract"
	"github.com/joulemark/joulemark/internal/promserver"
	"github.com/joulemark/joulemark/report"
	"github.com/joulemark/joulemark/rules"
)

// ruleSources are joulemark's embedded recording and alerting rules, for the
// embedded Prometheus to evaluate, and the cost inputs given as constant
// recording rules.
func ruleSources(cost report.CostInputs) ([]promserver.RuleSource, error) {
	out := costInputRules(cost)
	for _, name := range rules.FileNames {
		b, err := rules.File(name)
		if err != nil {
			return nil, fmt.Errorf("embedded rules %s: %w", name, err)
		}
		out = append(out, promserver.RuleSource{Name: name, YAML: b})
	}
	return out, nil
}

// costInputRules defines the cost input gauges the cost recording rules
// multiply by, as an operator would: one constant recording rule each, for
// the inputs given (none: no rule file).
func costInputRules(cost report.CostInputs) []promserver.RuleSource {
	var rules strings.Builder
	for _, in := range []struct {
		name string
		v    *float64
	}{{contract.CostPricePerKWh, cost.PricePerKWh}, {contract.CostPUE, cost.PUE}, {contract.CostCarbonIntensity, cost.CarbonIntensity}} {
		if in.v != nil {
			fmt.Fprintf(&rules, "      - record: %s\n        expr: vector(%s)\n", in.name, strconv.FormatFloat(*in.v, 'g', -1, 64))
		}
	}
	if rules.Len() == 0 {
		return nil
	}
	yaml := "groups:\n  - name: joulemark-demo-cost-inputs\n    rules:\n" + rules.String()
	return []promserver.RuleSource{{Name: "demo-cost-inputs.yml", YAML: []byte(yaml)}}
}
