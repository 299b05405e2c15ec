// Package fakeclock is a manually advanced clock for tests; it satisfies
// gpu.Clock, so a test can share one between the GPU simulator and the
// exporter.
package fakeclock

import (
	"sync"
	"time"
)

// Clock is a clock that moves only when Advance is called. It is safe for
// concurrent use.
type Clock struct {
	mu   sync.Mutex
	t    time.Time
	step time.Duration // wall minus t: the sum of the Steps
}

// Start is where New starts: Unix time 1 750 000 000 (2025-06-15).
var Start = time.Unix(1_750_000_000, 0)

// New returns a clock standing at Start.
func New() *Clock { return At(Start) }

// At returns a clock standing at t.
func At(t time.Time) *Clock { return &Clock{t: t} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// Step moves the wall clock by d (an NTP step, a VM migration) without
// moving the monotonic time Now returns; WallAt tells the wall time.
func (c *Clock) Step(d time.Duration) {
	c.mu.Lock()
	c.step += d
	c.mu.Unlock()
}

// WallAt returns the wall time of the reading t: t plus the steps so far.
func (c *Clock) WallAt(t time.Time) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return t.Add(c.step)
}
