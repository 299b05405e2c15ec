package openai

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestWatchCauses: fire names the deadline that passed (total before first
// token before idle) and calls the hook once; a fire before any deadline,
// or a call for an earlier stream's context, ends nothing; end reports
// whether the hook was called. No clock waits: fire is called directly.
func TestWatchCauses(t *testing.T) {
	w := newWatch()
	hooked := 0
	begin := func(cfg Config, at time.Time) {
		hooked = 0
		w.start(context.Background(), at, &cfg)
		w.setHook(func() { hooked++ })
	}
	past := time.Now().Add(-time.Hour)
	begin(Config{TotalTimeout: time.Minute, FirstTokenTimeout: time.Second, IdleTimeout: time.Second}, past)
	w.fire()
	if !errors.Is(w.err(), errTotalTimeout) || hooked != 1 || w.end() {
		t.Fatalf("all passed: cause %v, hook called %d times", w.err(), hooked)
	}
	begin(Config{TotalTimeout: 2 * time.Hour, FirstTokenTimeout: time.Second, IdleTimeout: time.Second}, past)
	w.fire()
	if !errors.Is(w.err(), errFirstTokenTimeout) || hooked != 1 || w.end() {
		t.Fatalf("first token passed: cause %v, hook called %d times", w.err(), hooked)
	}
	begin(Config{FirstTokenTimeout: time.Second, IdleTimeout: time.Second}, past)
	w.firstToken()
	w.fire()
	w.fire()
	if !errors.Is(w.err(), errIdleTimeout) || hooked != 1 || w.end() {
		t.Fatalf("idle passed: cause %v, hook called %d times", w.err(), hooked)
	}
	begin(Config{TotalTimeout: time.Hour, IdleTimeout: time.Hour}, time.Now())
	w.fire()
	w.parentDone() // a late call for an earlier stream: this one's context lives
	if w.err() != nil || hooked != 0 || !w.end() {
		t.Fatalf("nothing passed: cause %v, hook called %d times", w.err(), hooked)
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	cause := errors.New("stop")
	cancel(cause)
	w.start(ctx, time.Now(), &Config{})
	if !w.setHook(func() {}) && !errors.Is(w.err(), cause) || w.end() {
		t.Fatalf("an ended context: cause %v", w.err())
	}
}

// TestWatchParentKept: the context stays watched from stream to stream
// (registered once), ends a later stream when it ends, and is let go
// for a context that is never done, and by unwatch.
func TestWatchParentKept(t *testing.T) {
	w := newWatch()
	ctx, cancel := context.WithCancelCause(context.Background())
	w.start(ctx, time.Now(), &Config{})
	if !w.end() || w.watched != ctx.Done() || w.stop == nil {
		t.Fatal("the first stream's context is not watched")
	}
	w.start(ctx, time.Now(), &Config{})
	hooked := make(chan struct{})
	w.setHook(func() { close(hooked) })
	cause := errors.New("stop")
	cancel(cause)
	select {
	case <-hooked:
	case <-time.After(time.Minute):
		t.Fatal("the context ended during the second stream: no hook")
	}
	if w.end() || !errors.Is(w.err(), cause) {
		t.Fatalf("second stream: cause %v, want %v", w.err(), cause)
	}
	w.start(context.WithValue(context.Background(), hooked, 1), time.Now(), &Config{})
	if !w.end() || w.watched != nil || w.stop != nil {
		t.Fatal("a context that is never done is watched")
	}
	ctx, cancel = context.WithCancelCause(context.Background())
	defer cancel(nil)
	w.start(ctx, time.Now(), &Config{})
	w.end()
	w.unwatch()
	if w.watched != nil || w.stop != nil {
		t.Fatal("unwatch left the context watched")
	}
}
