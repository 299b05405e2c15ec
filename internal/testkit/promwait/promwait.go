// Package promwait waits, in tests, for a Prometheus query to settle on a
// value (rules evaluate and samples land asynchronously).
package promwait

import (
	"context"
	"testing"
	"time"

	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
)

// Value polls the instant query until it returns one sample equal to want,
// or fails the test after timeout with the last value or error seen.
func Value(t testing.TB, p v1.API, query, want string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var last string
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		v, _, _, err := p.Query(ctx, query, time.Now())
		cancel()
		switch vec, ok := v.(model.Vector); {
		case err != nil:
			last = err.Error()
		case ok && len(vec) == 1:
			if last = vec[0].Value.String(); last == want {
				return
			}
		default:
			last = v.String()
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("query %s: still %q after %s, want %s", query, last, timeout, want)
}
