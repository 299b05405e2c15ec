package analyze

import (
	"math"

	"github.com/joulemark/joulemark/internal/contract"
)

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
