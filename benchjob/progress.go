package benchjob

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// progress counts requests and shows them: a one-line bar redrawn on a TTY,
// periodic log lines otherwise.
type progress struct {
	started, done, errors, tokens atomic.Int64
	total                         atomic.Int64 // expected formal requests, 0 unknown
	phase                         atomic.Value // string

	tty      io.Writer
	log      *slog.Logger
	interval time.Duration
	stop     chan struct{}
	wg       sync.WaitGroup
}

func newProgress(out io.Writer, log *slog.Logger) *progress {
	p := &progress{log: log, interval: 10 * time.Second, stop: make(chan struct{})}
	p.phase.Store("")
	if out == nil {
		if fi, err := os.Stderr.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
			out = os.Stderr
		}
	}
	if out != nil {
		p.tty, p.interval = out, 500*time.Millisecond
	}
	return p
}

func (p *progress) reset(phase string, total int) {
	p.started.Store(0)
	p.done.Store(0)
	p.errors.Store(0)
	p.tokens.Store(0)
	p.total.Store(int64(total))
	p.phase.Store(phase)
}

func (p *progress) start() {
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		t := time.NewTicker(p.interval)
		defer t.Stop()
		last, lastTok, lastT := int64(0), int64(0), time.Now()
		for {
			select {
			case <-p.stop:
				if p.tty != nil {
					fmt.Fprintln(p.tty)
				}
				return
			case now := <-t.C:
				ph, _ := p.phase.Load().(string)
				if ph == "" {
					continue
				}
				d, tok := p.done.Load(), p.tokens.Load()
				if d < last || tok < lastTok { // a new phase began
					last, lastTok = 0, 0
				}
				dt := now.Sub(lastT).Seconds()
				rps, tps := float64(d-last)/dt, float64(tok-lastTok)/dt
				last, lastTok, lastT = d, tok, now
				if p.tty != nil {
					fmt.Fprintf(p.tty, "\r%-7s %s %d done, %d errors, %d in flight, %.1f req/s, %.0f tok/s  ",
						ph, bar(d, p.total.Load()), d, p.errors.Load(), p.started.Load()-d, rps, tps)
				} else {
					p.log.Info("progress", "phase", ph, "done", d, "errors", p.errors.Load(),
						"in_flight", p.started.Load()-d, "req_per_s", fmt.Sprintf("%.1f", rps), "tok_per_s", fmt.Sprintf("%.0f", tps))
				}
			}
		}
	}()
}

func (p *progress) close() {
	close(p.stop)
	p.wg.Wait()
}

func bar(done, total int64) string {
	const w = 20
	if total <= 0 {
		return ""
	}
	n := int(min(w, done*w/total))
	return "[" + strings.Repeat("#", n) + strings.Repeat(".", w-n) + "]"
}
