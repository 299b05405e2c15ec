package exporter

import "time"

// clockStepThreshold is how far the wall clock may drift from the anchored
// monotonic time before the exporter re-anchors and counts a clock step.
const clockStepThreshold = 50 * time.Millisecond

// wallClock is a Clock whose wall time can step apart from the times Now
// returns (a test clock); those times then carry the monotonic timeline.
type wallClock interface {
	WallAt(t time.Time) time.Time
}

// wallNanos is the wall-clock reading of t (a reading of e.clock) in unix
// nanoseconds.
func (e *Exporter) wallNanos(t time.Time) int64 {
	if w, ok := e.clock.(wallClock); ok {
		return w.WallAt(t).UnixNano()
	}
	return t.UnixNano()
}

// followWall re-anchors offsets on the wall clock when the wall reading of
// t differs from the anchored monotonic time by more than
// clockStepThreshold (NTP's first sync, a VM migration), so that the
// timestamps follow the wall clock; the step is counted and logged.
// Offsets stay monotonic, so energy integration never sees the step.
func (e *Exporter) followWall(t time.Time) {
	off := e.off(t)
	anchor := e.anchor.Load()
	step := time.Duration(e.wallNanos(t) - (anchor + off))
	if step.Abs() <= clockStepThreshold {
		return
	}
	if !e.anchor.CompareAndSwap(anchor, anchor+int64(step)) {
		return // another sampler re-anchored at the same time
	}
	e.clockSteps.Inc()
	e.log.Warn("wall clock stepped; timestamps re-anchored", "step", step, "wall", e.wall(off))
}
