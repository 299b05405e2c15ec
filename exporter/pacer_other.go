//go:build !linux

package exporter

import "time"

// newPacer is the portable pacer off Linux.
func newPacer(every, budget time.Duration, fire func()) (pacer, error) {
	return newTickerPacer(every, budget, fire), nil
}
