package analyze

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"

	"github.com/prometheus/common/model"

	"github.com/joulemark/joulemark/internal/contract"
)

// invalidValues counts, per metric, the values Prometheus answered that
// cannot be (NaN, ±Inf, out of range): they are left out and the report
// flagged prometheus_values_invalid. Safe for concurrent use.
type invalidValues struct {
	mu sync.Mutex
	n  map[string]int
}

// note counts one invalid value of metric.
func (iv *invalidValues) note(metric string) {
	iv.mu.Lock()
	defer iv.mu.Unlock()
	if iv.n == nil {
		iv.n = map[string]int{}
	}
	iv.n[metric]++
}

// list is "metric: count" per metric, sorted; nil when none.
func (iv *invalidValues) list() []string {
	iv.mu.Lock()
	defer iv.mu.Unlock()
	var out []string
	for m, n := range iv.n {
		out = append(out, fmt.Sprintf("%s: %d", m, n))
	}
	slices.Sort(out)
	return out
}

// finite drops the samples of vec whose value is NaN or ±Inf, noting each
// under the metric named in q.
func (iv *invalidValues) finite(q string, vec model.Vector) model.Vector {
	out := vec[:0]
	for _, s := range vec {
		if v := float64(s.Value); math.IsNaN(v) || math.IsInf(v, 0) {
			iv.note(queryMetric(q))
			continue
		}
		out = append(out, s)
	}
	return out
}

// queryMetric is the first joulemark_ metric name q mentions, else q.
func queryMetric(q string) string {
	i := strings.Index(q, "joulemark_")
	if i < 0 {
		return q
	}
	j := i
	for j < len(q) && (q[j] == '_' || q[j] >= 'a' && q[j] <= 'z' || q[j] >= '0' && q[j] <= '9') {
		j++
	}
	return q[i:j]
}

// tokenCount is a per-request token sample as a count: a whole number in
// [0, contract.MaxRequestTokens]; false otherwise (NaN, ±Inf, negative,
// fractional, absurd).
func tokenCount(v float64) (int64, bool) {
	if !(v >= 0 && v <= contract.MaxRequestTokens) || v != math.Trunc(v) {
		return 0, false
	}
	return int64(v), true
}

// successValue is a joulemark_request_success sample: 1 or 0; false for
// anything else (NaN).
func successValue(v float64) (success, ok bool) {
	return v == 1, v == 1 || v == 0
}

// plausibleDuration is a latency or TTFT sample: finite and not negative.
func plausibleDuration(v float64) bool { return v >= 0 && !math.IsInf(v, 0) }
