package openai

import (
	"context"
	"sync"
	"time"
)

// watch ends one stream early, for a deadline (total, first token, idle)
// or for the caller's context ending: it keeps the cause and calls the
// stream's hook (its connection's expire, which fails every read and
// write at once, or a context's cancel). It lives in the pooled state:
// its one timer, armed for the earliest deadline, serves stream after
// stream, and no context is made per stream on the client's own
// connections.
type watch struct {
	timer    *time.Timer
	onParent func() // w.parentDone, made once

	mu     sync.Mutex
	live   bool            // a stream is on
	parent context.Context // the stream's context
	// onParent is registered (context.AfterFunc) on a context whose Done
	// is watched; it stays registered from stream to stream while their
	// contexts share that Done (the run's), and is unregistered by stop
	// when another comes, or by unwatch when the pooled state is dropped.
	watched <-chan struct{}
	stop    func() bool
	cause   error  // why the stream ended early; nil while it goes on
	hook    func() // called once with cause set; nil: none yet
	// release, when set, is called by end (a context made for the stream)
	release func()
	// deadlines; zero: none
	total, first, idle time.Time
	idleFor            time.Duration
}

func newWatch() *watch {
	w := &watch{}
	w.onParent = w.parentDone
	w.timer = time.AfterFunc(time.Hour, w.fire)
	w.timer.Stop()
	return w
}

// start begins a stream under ctx at now with the client's timeouts.
func (w *watch) start(ctx context.Context, now time.Time, cfg *Config) {
	w.mu.Lock()
	w.live, w.parent, w.cause, w.hook = true, ctx, nil, nil
	w.total, w.first, w.idle, w.idleFor = time.Time{}, time.Time{}, time.Time{}, cfg.IdleTimeout
	if cfg.TotalTimeout > 0 {
		w.total = now.Add(cfg.TotalTimeout)
	}
	if cfg.FirstTokenTimeout > 0 {
		w.first = now.Add(cfg.FirstTokenTimeout)
	}
	if cfg.IdleTimeout > 0 {
		w.idle = now.Add(cfg.IdleTimeout)
	}
	w.arm(now)
	// onParent runs on its own goroutine (so not under this lock), once
	// the context is done; a context that is never done has a nil Done.
	if done := ctx.Done(); done != w.watched {
		if w.stop != nil {
			w.stop()
		}
		w.watched, w.stop = done, nil
		if done != nil {
			w.stop = context.AfterFunc(ctx, w.onParent)
		}
	}
	w.mu.Unlock()
	if ctx.Err() != nil {
		// Ended already: the stream ends before it starts, not when that
		// goroutine runs.
		w.parentDone()
	}
}

// end finishes the stream: no hook is called after it. It reports whether
// the hook was never called (the connection may serve again).
func (w *watch) end() bool {
	w.timer.Stop()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.release != nil {
		w.release()
	}
	w.live, w.parent, w.hook, w.release = false, nil, nil, nil
	return w.cause == nil
}

// unwatch unregisters onParent from the watched context: the pooled state
// that holds w is gone (runtime.AddCleanup), and a long-lived context
// must not keep w.
func (w *watch) unwatch() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stop != nil {
		w.stop()
	}
	w.watched, w.stop = nil, nil
}

// err is why the stream ended early; nil while it goes on.
func (w *watch) err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.cause
}

// setHook has h called when the stream ends early (at once if it has);
// nil removes the hook. It reports whether the stream goes on.
func (w *watch) setHook(h func()) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.cause != nil {
		if h != nil {
			h()
		}
		return false
	}
	w.hook = h
	return true
}

// progress pushes the idle deadline to now plus the idle timeout. The
// timer stays as it is: armed for an earlier instant, it finds the
// deadline moved and re-arms (fire), so a read costs no timer update.
func (w *watch) progress() {
	now := time.Now()
	w.mu.Lock()
	if w.idleFor > 0 {
		w.idle = now.Add(w.idleFor)
	}
	w.mu.Unlock()
}

// firstToken drops the first-token deadline (the timer, when armed for
// it, re-arms for the next one as progress says).
func (w *watch) firstToken() {
	w.mu.Lock()
	w.first = time.Time{}
	w.mu.Unlock()
}

// arm sets the timer for the earliest deadline. w.mu is held.
func (w *watch) arm(now time.Time) {
	var at time.Time
	for _, d := range [...]time.Time{w.total, w.first, w.idle} {
		if !d.IsZero() && (at.IsZero() || d.Before(at)) {
			at = d
		}
	}
	if at.IsZero() {
		w.timer.Stop()
		return
	}
	w.timer.Reset(at.Sub(now))
}

// fire ends the stream for the deadline that passed (total first, then
// first token, then idle); a timer that fired early, or for a stream now
// ended, does nothing but re-arm.
func (w *watch) fire() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.live || w.cause != nil {
		return
	}
	now := time.Now()
	passed := func(d time.Time) bool { return !d.IsZero() && !now.Before(d) }
	switch {
	case passed(w.total):
		w.endEarly(errTotalTimeout)
	case passed(w.first):
		w.endEarly(errFirstTokenTimeout)
	case passed(w.idle):
		w.endEarly(errIdleTimeout)
	default:
		w.arm(now)
	}
}

// parentDone ends the stream with its context's cause.
func (w *watch) parentDone() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.live || w.cause != nil {
		return
	}
	// A late call for a stream before this one finds a live context.
	if c := context.Cause(w.parent); c != nil {
		w.endEarly(c)
	}
}

// endEarly keeps cause and calls the hook. w.mu is held.
func (w *watch) endEarly(cause error) {
	w.cause = cause
	if w.hook != nil {
		w.hook()
	}
}

// context returns a context of ctx that the stream's early end cancels
// and its end releases (for net/http, which takes a context).
func (w *watch) context(ctx context.Context) context.Context {
	ctx, cancel := context.WithCancelCause(ctx)
	w.mu.Lock()
	w.release = func() { cancel(nil) }
	w.mu.Unlock()
	w.setHook(func() { cancel(w.cause) })
	return ctx
}

// endOf ends w's stream and returns why it ended early (nil: it did not).
func endOf(w *watch) error {
	w.end()
	return w.err()
}
