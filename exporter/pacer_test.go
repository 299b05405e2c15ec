package exporter

import (
	"testing"
	"time"
)

// forEachPacer runs test with the platform's pacer and with the Go
// ticker's, the one the loop falls back to where a timerfd cannot be made.
func forEachPacer(t *testing.T, test func(t *testing.T)) {
	t.Run("platform", test)
	t.Run("ticker", func(t *testing.T) {
		loopPacer = func(every, budget time.Duration, fire func()) (pacer, error) {
			return newTickerPacer(every, budget, fire), nil
		}
		defer func() { loopPacer = newPacer }()
		test(t)
	})
}
