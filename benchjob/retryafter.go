package benchjob

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/joulemark/joulemark/internal/contract"
	"github.com/joulemark/joulemark/internal/ctxtime"
	"github.com/joulemark/joulemark/internal/runarchive"
)

// serverWait is the pause the engine asked for with Retry-After: no
// request is sent before until, in the open loop or the closed one.
type serverWait struct {
	until  atomic.Int64 // unix nanoseconds
	paused atomic.Int64 // wall nanoseconds of pause asked for, overlaps counted once
}

// push extends the pause to now+d; it reports whether it did.
func (w *serverWait) push(now time.Time, d time.Duration) bool {
	end := now.Add(d).UnixNano()
	for {
		old := w.until.Load()
		if end <= old {
			return false
		}
		if w.until.CompareAndSwap(old, end) {
			w.paused.Add(end - max(old, now.UnixNano()))
			return true
		}
	}
}

// wait blocks until the pause is over, the deadline (when set) passes or
// ctx ends; it returns how long it waited (0: no pause was asked for).
func (w *serverWait) wait(ctx context.Context, deadline time.Time) time.Duration {
	var waited time.Duration
	for {
		now := time.Now()
		d := time.Duration(w.until.Load() - now.UnixNano())
		if !deadline.IsZero() {
			d = min(d, deadline.Sub(now))
		}
		if d <= 0 || ctxtime.Sleep(ctx, d) != nil {
			return waited
		}
		waited += time.Since(now)
	}
}

// pausedFor is the pause asked for so far.
func (w *serverWait) pausedFor() time.Duration { return time.Duration(w.paused.Load()) }

// honourRetryAfter pauses the load for the wait a 429/503 asked for.
func (r *runner) honourRetryAfter(rec *runarchive.Request, d time.Duration) {
	if d <= 0 || !r.asked.push(time.Now(), d) {
		return
	}
	if r.rec.flag(contract.FlagRetryAfter) {
		r.log.Warn("the engine asked the client to wait (Retry-After): the load pauses as asked, recorded as retry_after_seconds and retry_after_wait_seconds",
			"status", rec.StatusCode, "retry_after", d)
	}
}
