package benchjob

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/joulemark/joulemark/internal/contract"
)

// The load a bench run gets when it names none: enough for the steady
// state on a steady engine (SteadyStateNeed(DefaultConcurrency) = 316).
const (
	DefaultConcurrency    = 8
	DefaultFormalRequests = 400
)

// applyLoadDefaults fills the documented defaults: concurrency when no
// load shape is given (no concurrency, rate, trace or sweep), formal
// requests when nothing ends the formal phase.
func (c *Config) applyLoadDefaults() {
	if c.Concurrency == 0 && c.Rate == 0 && c.Workload.Trace == "" && len(c.SweepConcurrency) == 0 && len(c.SweepRate) == 0 {
		c.Concurrency = DefaultConcurrency
	}
	if c.Requests == 0 && c.Duration == 0 && c.Workload.Trace == "" {
		c.Requests = DefaultFormalRequests
	}
}

// SteadyStateNeed is how many successful formal requests analyze needs
// (its default windows, contract.SteadyStateWindow and Windows) to find the steady state of
// a steady engine at closed-loop concurrency conc (0: an open loop): the
// windows, the drain after the last send that the test leaves out (about
// conc requests) and a ramp of as many; an open loop's drain is taken as a
// tenth of the windows.
func SteadyStateNeed(conc int) int {
	w := contract.SteadyStateWindow * contract.SteadyStateWindows
	if conc <= 0 {
		return w + int(math.Ceil(float64(w)/10))
	}
	return w + 2*conc
}

// steadyStateWarning says, before the load starts, when the formal
// requests configured cannot reach the steady state; "" when they can (or
// only a duration bounds the phase: see watchFormalRate).
func (c *Config) steadyStateWarning() string {
	if c.Requests == 0 || c.Workload.Trace != "" {
		return ""
	}
	need := SteadyStateNeed(c.Concurrency)
	if c.Requests >= need {
		return ""
	}
	return fmt.Sprintf("%d formal requests cannot reach the steady state: analyze tests %s before the drain; use --requests %d or more",
		c.Requests, windowsText(), need)
}

func windowsText() string {
	return fmt.Sprintf("%d windows of %d requests", contract.SteadyStateWindows, contract.SteadyStateWindow)
}

// watchFormalRate warns once, a fifth into a formal phase bounded by
// duration alone (at most 30 s in), when the rate so far would end it
// with too few requests for the steady state, naming the duration needed.
func (r *runner) watchFormalRate(ctx context.Context, start time.Time) {
	d := r.cfg.Duration
	if d <= 0 || r.cfg.Requests > 0 && r.cfg.Requests < SteadyStateNeed(r.cfg.Concurrency) {
		return // bounded by requests; warned before the load
	}
	at := min(d/5, 30*time.Second)
	select {
	case <-ctx.Done():
		return
	case <-time.After(at):
	}
	done := float64(r.progress.done.Load())
	el := time.Since(start).Seconds()
	if done <= 0 || el <= 0 {
		return
	}
	rate := done / el
	projected := int(rate * d.Seconds())
	if r.cfg.Requests > 0 {
		projected = min(projected, r.cfg.Requests)
	}
	need := SteadyStateNeed(r.cfg.Concurrency)
	if projected >= need {
		return
	}
	want := time.Duration(math.Ceil(float64(need)/rate)) * time.Second
	r.log.Warn(fmt.Sprintf("at the observed %.2f req/s, --duration %s ends after about %d formal requests; the steady state (%s before the drain) needs %d: use --duration %s or --requests %d",
		rate, d, projected, windowsText(), need, want, need))
}
