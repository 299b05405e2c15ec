package exporter

import "time"

// pacer wakes the sampling loop every interval and runs its watchdog. On
// Linux it is a pair of timerfds read through the runtime's poller
// (pacer_linux.go): no Go timer is pending between ticks, so neither the
// poller nor sysmon wakes besides the tick itself; elsewhere, and when a
// timerfd cannot be made, a time.Ticker and a time.AfterFunc.
type pacer interface {
	// wait blocks until the next tick and returns when it was due: the
	// first tick not waited for, late when the loop was; false once
	// stopped.
	wait() (time.Time, bool)
	// guard arms the watchdog to fire budget from now, replacing the
	// previous arming.
	guard()
	// ease says the tick's reads returned; the watchdog may stay armed
	// until the next guard (a firing then finds no read to leave).
	ease()
	// watchdog runs the watchdog until stop, where it needs a goroutine.
	watchdog()
	// stop ends wait and the watchdog; wait returns false after it.
	stop()
}

// tickerPacer is the portable pacer: a time.Ticker and a time.AfterFunc.
type tickerPacer struct {
	ticker *time.Ticker
	watch  *time.Timer
	budget time.Duration
	done   chan struct{}
}

func newTickerPacer(every, budget time.Duration, fire func()) *tickerPacer {
	p := &tickerPacer{ticker: time.NewTicker(every), watch: time.AfterFunc(time.Hour, fire),
		budget: budget, done: make(chan struct{})}
	p.watch.Stop()
	return p
}

func (p *tickerPacer) wait() (time.Time, bool) {
	select {
	case <-p.done:
		return time.Time{}, false
	case t := <-p.ticker.C:
		return t, true
	}
}

func (p *tickerPacer) guard() { p.watch.Reset(p.budget) }
func (p *tickerPacer) ease()  { p.watch.Stop() }

func (p *tickerPacer) stop() {
	p.ticker.Stop()
	p.watch.Stop()
	close(p.done)
}

// watchdog does nothing: the AfterFunc runs fire.
func (p *tickerPacer) watchdog() {}
