// Package promquery holds PromQL reads shared by the analyses of one run
// (analyze) and of a fleet over a time range (production).
package promquery

import (
	"context"
	"fmt"
	"time"

	"github.com/joulemark/joulemark/internal/stats"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
)

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
