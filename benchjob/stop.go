package benchjob

import (
	"context"
	"errors"
	"time"
)

// How a run stops on request (docs/bench.md, "Stopping a run"): the first
// SIGINT/SIGTERM (Run's context canceled) sends no new request and gives
// those in flight the drain timeout to finish; Options.HardStop canceled
// (the second signal) cancels them at once and ends the run without
// waiting (engine killed, no flush wait). Either way the archive is final
// and the run is ended on every exporter.
var (
	errStopDrained = errors.New("stopped: the drain timeout after the stop passed")
	errHardStop    = errors.New("stopped at once (second signal)")
)

// armStop returns the context of the run's requests: canceled a drain
// timeout after ctx ends, at once when the hard stop comes, or by
// cancelReq (an engine death, a panic). release disarms the timers.
func (r *runner) armStop(ctx context.Context) (reqCtx context.Context, cancelReq context.CancelCauseFunc, release func()) {
	reqCtx, cancelReq = context.WithCancelCause(context.WithoutCancel(ctx))
	drain := r.cfg.Timeouts.Drain
	var timer *time.Timer
	stopGraceful := context.AfterFunc(ctx, func() {
		if n := r.inFlight.Load(); n > 0 {
			r.log.Warn("stopping: no new request; the requests in flight get the drain timeout to finish (a second signal stops at once)",
				"in_flight", n, "drain_timeout", drain)
		}
		r.mu.Lock()
		timer = time.AfterFunc(drain, func() { cancelReq(errStopDrained) })
		r.mu.Unlock()
	})
	stopHard := func() bool { return true }
	if h := r.opts.HardStop; h != nil {
		stopHard = context.AfterFunc(h, func() {
			r.log.Warn("stopping at once: requests canceled, engine killed, run ended on the exporters")
			cancelReq(errHardStop)
		})
	}
	return reqCtx, cancelReq, func() {
		stopGraceful()
		stopHard()
		r.mu.Lock()
		if timer != nil {
			timer.Stop()
		}
		r.mu.Unlock()
		cancelReq(nil)
	}
}

// stopBase is the parent context of the waits of a run's end (the
// engine's stop grace, the final flush): the hard stop cuts them short.
func (r *runner) stopBase() context.Context {
	if r.opts.HardStop != nil {
		return r.opts.HardStop
	}
	return context.Background()
}

// requestContext is the context a phase's requests run under (r.reqCtx,
// set by run; ctx itself before).
func (r *runner) requestContext(ctx context.Context) context.Context {
	if r.reqCtx != nil {
		return r.reqCtx
	}
	return ctx
}
