package main

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
)

// Stop signals (docs/cli.md): the first SIGINT/SIGTERM cancels the
// command's context (a graceful stop); the second cancels the hard-stop
// context of a command that takes one (bench: stop at once, the run still
// ended on the exporters), and kills any other command at once, as the
// third kills bench.
type stopSignals struct {
	hard     context.Context
	stopHard context.CancelCauseFunc
	used     atomic.Bool // a command took the hard stop
}

type stopKey struct{}

var (
	errSignal     = errors.New("interrupted (SIGINT/SIGTERM)")
	errHardSignal = errors.New("interrupted twice: stopping at once")
)

// notifyStop is main's context: canceled by the first signal, carrying the
// hard stop of the second. release stops listening.
func notifyStop() (context.Context, func()) {
	s := &stopSignals{}
	s.hard, s.stopHard = context.WithCancelCause(context.Background())
	ctx, cancel := context.WithCancelCause(context.WithValue(context.Background(), stopKey{}, s))
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case <-ch:
			cancel(errSignal)
		case <-done:
			return
		}
		var sig os.Signal
		select {
		case sig = <-ch:
		case <-done:
			return
		}
		signal.Stop(ch) // the next one kills
		if !s.used.Load() {
			// Kill at once, as Go's default handling would.
			_ = syscall.Kill(os.Getpid(), sig.(syscall.Signal))
			return
		}
		s.stopHard(errHardSignal)
	}()
	return ctx, func() { signal.Stop(ch); close(done); cancel(nil) }
}

// hardStop is the hard-stop context main's signals carry in ctx (nil when
// none): the caller then handles the second signal itself.
func hardStop(ctx context.Context) context.Context {
	s, _ := ctx.Value(stopKey{}).(*stopSignals)
	if s == nil {
		return nil
	}
	s.used.Store(true)
	return s.hard
}
