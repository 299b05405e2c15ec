package benchjob

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"

	"github.com/joulemark/joulemark/internal/runarchive"
)

// ErrPanic is wrapped by Run's error when a bug panicked during the run:
// the panic was recovered, the run stopped, the archive was finalised
// (status failed) and the run ended on every exporter. The CLI exits 1,
// never 2 (bad usage), for it.
var ErrPanic = errors.New("internal error (panic)")

// crashes records the first panic of a run and stops the run.
type crashes struct {
	mu     sync.Mutex
	err    error
	cancel context.CancelCauseFunc // the run's context; nil before the run
}

// setCancel arms the stop of the run.
func (c *crashes) setCancel(cancel context.CancelCauseFunc) {
	c.mu.Lock()
	c.cancel = cancel
	c.mu.Unlock()
}

// recovered turns a recovered panic value into the run's error (the first
// one is kept), logs it with its stack and stops the run.
func (r *runner) recovered(where string, v any) error {
	err := fmt.Errorf("%w in %s: %v", ErrPanic, where, v)
	r.log.Error("internal error: panic recovered; stopping the run and finalising its archive",
		"where", where, "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
	c := &r.crash
	c.mu.Lock()
	if c.err == nil {
		c.err = err
	}
	cancel := c.cancel
	c.mu.Unlock()
	if cancel != nil {
		cancel(err)
	}
	return err
}

// guard recovers a panic of the goroutine it is deferred in (a request, a
// ticker): the run stops as recovered says, the process does not die.
func (r *runner) guard(where string) {
	if v := recover(); v != nil {
		r.recovered(where, v)
	}
}

// panicErr is the run's first recovered panic, nil when none.
func (r *runner) panicErr() error {
	r.crash.mu.Lock()
	defer r.crash.mu.Unlock()
	return r.crash.err
}

// safeLifecycle runs the lifecycle, a panic in it becoming its error.
func (r *runner) safeLifecycle(ctx context.Context, cancelRun context.CancelCauseFunc) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = r.recovered("the run's lifecycle", v)
		}
	}()
	err = r.lifecycle(ctx, cancelRun)
	if perr := r.panicErr(); perr != nil {
		// A request's panic stopped the run: that is why it ended.
		err = perr
	}
	return err
}

// testHookRequest, when set (tests only), is called with every finished
// request's record before it is kept.
var testHookRequest func(*runarchive.Request)
