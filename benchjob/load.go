package benchjob

import (
	"context"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/joulemark/joulemark/benchjob/openai"
	"github.com/joulemark/joulemark/internal/ctxtime"
	"github.com/joulemark/joulemark/internal/stats"
)

// slots hands out in-flight slot indexes (the `slot` label). A slot is
// reused only by a request sent after the millisecond in which its previous
// request ended (both as sampleMs, the samples' timestamps), so no two
// samples of one series share a timestamp, and samples of one series are
// appended in time order.
type slots struct {
	mu      sync.Mutex
	busy    []bool
	lastEnd []int64
}

func (s *slots) acquire() int {
	now := sampleMs(unixSeconds(time.Now()))
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, b := range s.busy {
		if !b && s.lastEnd[i] < now {
			s.busy[i] = true
			return i
		}
	}
	s.busy = append(s.busy, true)
	s.lastEnd = append(s.lastEnd, 0)
	return len(s.busy) - 1
}

func (s *slots) release(i int, endMs int64) {
	s.mu.Lock()
	s.busy[i] = false
	if endMs > s.lastEnd[i] {
		s.lastEnd[i] = endMs
	}
	s.mu.Unlock()
}

// loadSpec is one phase's load.
type loadSpec struct {
	phase       string
	requests    int           // 0: unbounded
	duration    time.Duration // 0: unbounded
	concurrency int           // closed loop when > 0
	rate        float64       // open loop (requests/s)
	burstiness  float64       // gamma shape; 1 = Poisson
	maxConc     int           // open-loop cap; 0 = none
	trace       []traceEntry  // open loop from a trace
	seed        int64
}

// loadStats is what a phase's load did.
type loadStats struct {
	mu         sync.Mutex // sent, lastSend, exhausted (closed-loop workers)
	start, end time.Time
	lastSend   time.Time
	sent       int
	lags       []time.Duration // open loop: dispatcher lateness per arrival
	capWait    time.Duration   // open loop: time spent waiting for the concurrency cap
	retryWait  time.Duration   // the pause the engine asked for (Retry-After) during the phase
	exhausted  bool            // the prompt source (a trace) ran out
}

// achievedRate is requests sent per second from the phase start to the last send.
func (s *loadStats) achievedRate() float64 {
	d := s.lastSend.Sub(s.start).Seconds()
	if s.sent <= 1 || d <= 0 {
		return 0
	}
	return float64(s.sent-1) / d
}

// lagPercentile returns percentile p (0-100) of the dispatch lags, at
// stats' rank.
func (s *loadStats) lagPercentile(p float64) time.Duration {
	if len(s.lags) == 0 {
		return 0
	}
	l := slices.Clone(s.lags)
	slices.Sort(l)
	return l[stats.RankIndex(p, len(l))]
}

// runLoad runs one phase's load until its bound is reached, the prompts run
// out or ctx ends; ctx ending stops the dispatch only: the requests run
// under the run's request context (stop.go), which a stop cancels after
// the drain timeout. A duration is a hard bound: requests still running a
// drain timeout after it are canceled (class canceled_at_end).
func (r *runner) runLoad(ctx context.Context, spec loadSpec) *loadStats {
	st := &loadStats{start: time.Now()}
	reqCtx := r.requestContext(ctx)
	var deadline time.Time
	if spec.duration > 0 {
		deadline = st.start.Add(spec.duration)
		var cancel context.CancelCauseFunc
		reqCtx, cancel = context.WithCancelCause(reqCtx)
		defer cancel(nil)
		drain := r.cfg.Timeouts.Drain
		stopDrain := r.drainAt(deadline, drain, spec.phase, func() { cancel(openai.ErrCanceledAtEnd) })
		defer stopDrain()
	}
	paused0 := r.asked.pausedFor()
	switch {
	case spec.concurrency > 0:
		r.closedLoop(ctx, reqCtx, spec, deadline, st)
	case spec.trace != nil:
		r.openLoop(ctx, reqCtx, spec, deadline, st, traceArrivals(spec.trace, st.start))
	default:
		r.openLoop(ctx, reqCtx, spec, deadline, st, spec.rateArrivals(st.start))
	}
	st.end = time.Now()
	st.retryWait = r.asked.pausedFor() - paused0
	return st
}

// noteSend counts one request sent.
func (s *loadStats) noteSend() {
	s.mu.Lock()
	s.sent++
	s.lastSend = time.Now()
	s.mu.Unlock()
}

// workers is how many closed-loop workers a phase needs: its concurrency,
// at most its number of requests (more would only wait).
func (spec loadSpec) workers() int {
	if spec.requests > 0 {
		return min(spec.concurrency, spec.requests)
	}
	return spec.concurrency
}

// ConcurrencyLimit is the most requests a run may keep in flight
// (concurrency, max_concurrency, a sweep's value): more is refused as bad
// usage, as no engine serves that many and each holds a connection.
const ConcurrencyLimit = 100_000

// clampConcurrency warns when a closed loop asks for more requests in
// flight than it sends (it runs with as many as it sends) and records the
// concurrency it runs with.
func (r *runner) clampConcurrency(spec loadSpec) {
	if n := spec.workers(); n < spec.concurrency {
		r.log.Warn("concurrency above the number of requests: running with one request in flight per request",
			"phase", spec.phase, "concurrency", spec.concurrency, "requests", spec.requests, "running_with", n)
		r.rec.man.Load.Concurrency = n
	}
}

// closedLoop keeps spec.workers() requests in flight until a bound.
func (r *runner) closedLoop(ctx, reqCtx context.Context, spec loadSpec, deadline time.Time, st *loadStats) {
	var issued atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < spec.workers() && ctx.Err() == nil; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				if spec.requests > 0 && issued.Add(1) > int64(spec.requests) {
					return
				}
				r.asked.wait(ctx, deadline)
				if ctx.Err() != nil || (!deadline.IsZero() && !time.Now().Before(deadline)) {
					return
				}
				p, ok := r.src.take()
				if !ok {
					st.mu.Lock()
					st.exhausted = true
					st.mu.Unlock()
					return
				}
				st.noteSend()
				r.do(reqCtx, spec.phase, p, time.Time{})
			}
		}()
	}
	wg.Wait()
}

// arrivals is an open loop's schedule: the instant of arrival i, given
// the previous one and how far the engine's Retry-After pauses moved the
// schedule; false when there is no such arrival (a trace ran out).
type arrivals func(i int, prev time.Time, shift time.Duration) (time.Time, bool)

// rateArrivals are arrivals at spec.rate from start: inter-arrival times
// drawn from a gamma of shape burstiness (1: Poisson) and mean 1/rate.
func (spec loadSpec) rateArrivals(start time.Time) arrivals {
	rng := rand.New(rand.NewPCG(uint64(spec.seed), 2))
	shape := spec.burstiness
	if shape <= 0 {
		shape = 1
	}
	var gap distuv.Gamma
	if spec.rate > 0 {
		gap = distuv.Gamma{Alpha: shape, Beta: spec.rate * shape, Src: rng}
	}
	return func(i int, prev time.Time, _ time.Duration) (time.Time, bool) {
		if i == 0 {
			return start, true
		}
		return prev.Add(time.Duration(gap.Rand() * float64(time.Second))), true
	}
}

// traceArrivals replay a trace from start: arrival i at its offset, moved
// by the pauses.
func traceArrivals(trace []traceEntry, start time.Time) arrivals {
	return func(i int, _ time.Time, shift time.Duration) (time.Time, bool) {
		if i >= len(trace) {
			return time.Time{}, false
		}
		return start.Add(trace[i].At + shift), true
	}
}

// openLoop sends requests at their arrival times, capped by spec.maxConc,
// until a bound.
func (r *runner) openLoop(ctx, reqCtx context.Context, spec loadSpec, deadline time.Time, st *loadStats, at arrivals) {
	var sem chan struct{}
	if spec.maxConc > 0 {
		sem = make(chan struct{}, spec.maxConc)
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	next, prevDone := st.start, st.start
	var shift time.Duration // how far the engine's Retry-After pauses moved the schedule
	for i := 0; ctx.Err() == nil && (spec.requests == 0 || i < spec.requests); i++ {
		var ok bool
		if next, ok = at(i, next, shift); !ok {
			st.exhausted = true
			return
		}
		if (!deadline.IsZero() && !next.Before(deadline)) || ctxtime.Sleep(ctx, time.Until(next)) != nil {
			return
		}
		st.lags = append(st.lags, max(0, time.Since(later(next, prevDone))))
		if r.asked.wait(ctx, deadline) > 0 {
			// The engine asked for a pause: the schedule moves by it
			// (no burst of the arrivals it held back).
			late := max(0, time.Since(next))
			shift, next = shift+late, next.Add(late)
			if ctx.Err() != nil || (!deadline.IsZero() && !time.Now().Before(deadline)) {
				return
			}
		}
		p, ok := r.src.take()
		if !ok {
			st.exhausted = true
			return
		}
		if !acquire(ctx, sem, st) {
			return
		}
		st.noteSend()
		wg.Add(1)
		go func(p Prompt, scheduled time.Time) {
			defer wg.Done()
			r.do(reqCtx, spec.phase, p, scheduled)
			if sem != nil {
				<-sem
			}
		}(p, next)
		prevDone = time.Now()
	}
}

// acquire takes a place under the open loop's concurrency cap (sem; nil:
// none), counting the wait in st; false when ctx ended first.
func acquire(ctx context.Context, sem chan struct{}, st *loadStats) bool {
	if sem == nil {
		return true
	}
	t0 := time.Now()
	select {
	case sem <- struct{}{}:
	case <-ctx.Done():
		return false
	}
	st.capWait += time.Since(t0)
	return true
}

// later is the later of two instants.
func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// drainAt says, at deadline, what the phase now waits for, and calls
// cancelAll once the drain timeout after it passed too. The returned
// function stops both timers.
func (r *runner) drainAt(deadline time.Time, drain time.Duration, phase string, cancelAll func()) func() {
	say := time.AfterFunc(time.Until(deadline), func() {
		if n := r.inFlight.Load(); n > 0 {
			r.log.Info("phase duration over: waiting for the requests still running", "phase", phase,
				"in_flight", n, "drain_timeout", drain)
		}
	})
	end := time.AfterFunc(time.Until(deadline.Add(drain)), func() {
		if n := r.inFlight.Load(); n > 0 {
			r.log.Warn("drain timeout over: canceling the requests still running (class canceled_at_end)",
				"phase", phase, "in_flight", n)
		}
		cancelAll()
	})
	return func() { say.Stop(); end.Stop() }
}

// do sends one request and records it.
// A panic in it is recovered (guard): the run stops, the process lives.
func (r *runner) do(ctx context.Context, phase string, p Prompt, scheduled time.Time) {
	defer r.guard("a request")
	slot := r.slots.acquire()
	r.inFlight.Add(1)
	defer r.inFlight.Add(-1)
	r.rec.started()
	r.progress.started.Add(1)
	resp := r.client.Stream(ctx, &openai.Request{
		Endpoint: openai.Endpoint(r.cfg.Endpoint), Model: r.model,
		Prompt: p.Text, MaxTokens: p.MaxTokens, Extras: r.cfg.Extras, KeepText: p.Check != nil,
	})
	r.rec.ended()
	rec := newRecord(phase, slot, p, resp, scheduled)
	if testHookRequest != nil {
		testHookRequest(rec)
	}
	if p.Check != nil && rec.Success {
		q := p.Check.Evaluate(resp.Text)
		rec.Quality = &q
	}
	r.record(rec)
	r.slots.release(slot, sampleMs(rec.EndTime))
	r.honourRetryAfter(rec, resp.RetryAfter)
}
