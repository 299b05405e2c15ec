package demo

import (
	"fmt"

	"github.com/joulemark/joulemark/internal/promserver"
	"github.com/joulemark/joulemark/rules"
)

// ruleSources are joulemark's embedded recording and alerting rules, for the
// embedded Prometheus to evaluate.
func ruleSources() ([]promserver.RuleSource, error) {
	var out []promserver.RuleSource
	for _, name := range rules.FileNames {
		b, err := rules.File(name)
		if err != nil {
			return nil, fmt.Errorf("embedded rules %s: %w", name, err)
		}
		out = append(out, promserver.RuleSource{Name: name, YAML: b})
	}
	return out, nil
}
