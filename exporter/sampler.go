package exporter

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/joulemark/joulemark/internal/gpu"
)

// Start begins sampling until ctx ends or Close: one loop on one timer
// reads every GPU and then the host's RAPL zones, so the sampler costs one
// wake-up per interval whatever the GPUs; a GPU whose driver call hangs
// stalls only itself (sampler).
// The exporter is ready once every GPU answered its first read, or after
// stallIntervals intervals. Begin runs first when it has not (its error is
// logged: call Begin to refuse it).
func (e *Exporter) Start(ctx context.Context) {
	e.startOnce.Do(func() {
		if err := e.Begin(); err != nil {
			e.log.Error("starting anyway", "err", err)
		}
		ctx, cancel := context.WithCancel(ctx)
		e.stop = cancel
		e.mu.Lock()
		e.started = e.off(e.clock.Now())
		e.sampling = true
		e.mu.Unlock()
		if e.store != nil { // before the sampling loop, which sends on them
			e.saveReq = make(chan struct{}, 1)
			e.saveTick = make(chan struct{}, 1)
			e.saveDone = make(chan struct{})
		}
		var first sync.WaitGroup
		first.Add(len(e.gpus))
		e.smp.start(ctx, first.Done)
		e.wg.Add(1)
		go func() {
			defer e.wg.Done()
			done := make(chan struct{})
			go func() { first.Wait(); close(done) }()
			t := time.NewTimer(stallIntervals * e.cfg.Interval)
			defer t.Stop()
			select {
			case <-done:
			case <-t.C:
				e.log.Warn("not every GPU answered its first read; serving anyway", "waited", stallIntervals*e.cfg.Interval)
			case <-ctx.Done():
			}
			e.readyOnce.Do(func() { close(e.ready) })
		}()
		if e.attr != nil {
			e.wg.Go(func() { e.attr.run(ctx, e.cfg.SlowInterval) })
		}
		if e.store != nil {
			e.wg.Go(func() {
				defer close(e.saveDone)
				e.saveLoop(ctx)
			})
		}
	})
}

// sampler is the exporter's one sampling loop. Every Interval one
// goroutine reads every GPU's power, one after the other, and the slow
// metrics of each GPU whose SlowInterval came (spread over the GPUs), then
// folds the tick's readings into the state under one lock: one wake-up,
// one lock, one Observe per tick, no allocation. A read that has not
// returned within readBudget is left to its goroutine and the loop goes on
// in a new one (takeover), so a hung GPU stalls only itself: it is skipped,
// and counted as an overrun, on every tick until its read returns; the
// goroutine left with it folds that one read in and exits.
type sampler struct {
	e      *Exporter
	every  time.Duration
	budget time.Duration
	ctx    context.Context
	p      pacer     // wakes the loop every interval; runs takeover when a tick's reads outlast budget
	base   time.Time // when the loop started: deadline counts from it
	// deadline is when the tick's reads outlast budget (since base): a
	// watchdog firing before it is stale.
	deadline atomic.Int64
	// firstDone is called once per GPU, when its first fast read returned.
	firstDone func()
	answered  []atomic.Bool

	// reading is the generation of the goroutine running the loop (high 32
	// bits) and the read it is in (low bits: 0 none, else kind<<16|GPU+1).
	reading atomic.Uint64
	// stuck marks the GPUs whose read was left to a goroutine of its own.
	stuck []atomic.Bool

	// The tick's state, owned by the goroutine running the loop and handed
	// over with it.
	fast     []fastRead
	slow     []slowRead
	nextSlow []int64   // offset each GPU's slow read is due at
	skipped  uint64    // GPU reads skipped this tick (stuck)
	real     bool      // the exporter's clock is the system clock: one reading serves both
	mark     time.Time // system time the next read's duration counts from
	last     time.Time // the clock when the tick's latest read returned
	began    time.Time
	tickAt   time.Time // the tick's scheduled time (lateness: overruns)
	nextSave time.Time // system time the save loop's next tick is due (saveTick)
}

// fastRead is one GPU's fast read in a tick.
type fastRead struct {
	ok   bool // read this tick
	s    gpu.Sample
	err  error
	took time.Duration // the backend call
	done int64         // offset when it returned
}

// slowRead is one GPU's slow read in a tick.
type slowRead struct {
	ok  bool
	s   gpu.SlowSample
	err error
}

// Read kinds in sampler.reading.
const (
	readFast = 1 << 16
	readSlow = 2 << 16
	readGPU  = 1<<16 - 1 // the GPU+1 bits
)

func newSampler(e *Exporter) *sampler {
	n := len(e.gpus)
	s := &sampler{e: e, every: e.cfg.Interval, budget: readBudget(e.cfg.Interval),
		answered: make([]atomic.Bool, n), stuck: make([]atomic.Bool, n),
		fast: make([]fastRead, n), slow: make([]slowRead, n), nextSlow: make([]int64, n)}
	_, s.real = e.clock.(gpu.RealClock)
	return s
}

// readBudget is how long a tick's reads may take before the GPU being
// read is left to its goroutine: past the next tick, so that the next
// tick re-arms the watchdog before it expires (the timerfd pacer never
// disarms it: one system call a tick) and, on a Go ticker, arming it never
// wakes the runtime's poller earlier than the ticker does; the GPUs after
// the hung one are then read half an interval late, once.
func readBudget(every time.Duration) time.Duration { return every + every/2 }

// loopPacer makes the loop's pacer (tests swap in the Go ticker's).
var loopPacer = newPacer

// start runs the loop's first tick now, then one every interval.
func (s *sampler) start(ctx context.Context, firstDone func()) {
	s.ctx, s.firstDone = ctx, firstDone
	p, err := loopPacer(s.every, s.budget, s.takeover)
	if err != nil {
		s.e.log.Debug("sampling on a Go ticker", "err", err)
		p = newTickerPacer(s.every, s.budget, s.takeover)
	}
	s.p, s.base = p, time.Now()
	s.tickAt, s.nextSave = s.base, s.base.Add(s.e.saveEvery())
	context.AfterFunc(ctx, p.stop)
	s.e.wg.Go(p.watchdog)
	s.e.wg.Add(1)
	go s.run(0, 0)
}

// run is the loop in generation gen: it finishes the tick in progress from
// GPU from, then ticks until ctx ends; it returns early when its read was
// left to it (takeover).
func (s *sampler) run(gen uint64, from int) {
	defer s.e.wg.Done()
	if !s.sweep(gen, from) {
		return
	}
	for {
		at, ok := s.p.wait()
		if !ok || s.ctx.Err() != nil {
			return
		}
		s.tickAt = at
		if !s.sweep(gen, 0) {
			return
		}
	}
}

// takeover leaves the read in progress to its goroutine and runs the loop
// on in a new one, from the next GPU. It runs when the watchdog fires.
func (s *sampler) takeover() {
	v := s.reading.Load()
	if v&readGPU == 0 || time.Since(s.base) < time.Duration(s.deadline.Load()) {
		return // the reads ended meanwhile, or a later tick re-armed the watchdog
	}
	gen, i := v>>32, int(v&readGPU)-1
	s.stuck[i].Store(true) // before the swap: the left goroutine clears it
	if !s.reading.CompareAndSwap(v, (gen+1)<<32) {
		s.stuck[i].Store(false)
		return
	}
	s.e.log.Warn("GPU read not returned; sampling the other GPUs without it", "gpu", i, "waited", s.budget)
	s.e.wg.Add(1)
	go s.run(gen+1, i+1)
}

// nextSlowDue says GPU i's slow read is due this tick.
func (s *sampler) nextSlowDue(i int) bool { return s.e.off(s.began) >= s.nextSlow[i] }

// sweep reads GPUs from..n-1 in generation gen, then folds the tick in;
// false when this goroutine's read was left to it.
func (s *sampler) sweep(gen uint64, from int) bool {
	if from == 0 {
		s.begin()
	}
	if s.p != nil {
		at := s.mark
		if from > 0 {
			at = time.Now()
		}
		s.deadline.Store(int64(at.Sub(s.base) + s.budget))
		s.p.guard()
	}
	for i := from; i < len(s.fast); i++ {
		s.fast[i].ok, s.slow[i].ok = false, false
		if s.stuck[i].Load() {
			s.skipped++
			continue
		}
		if !s.readFast(gen, i) {
			return false
		}
		if s.nextSlowDue(i) && !s.readSlow(gen, i) {
			return false
		}
	}
	if s.p != nil {
		s.p.ease()
	}
	s.apply()
	if s.p != nil {
		if h := s.e.cfg.Host; h != nil {
			h.Sample() // the host's RAPL zones, on the GPUs' tick
		}
		s.tickSave()
	}
	return true
}

// tickSave ticks the save loop every saveEvery (Exporter.saveTick).
func (s *sampler) tickSave() {
	if s.e.saveTick == nil || s.mark.Before(s.nextSave) {
		return
	}
	s.nextSave = s.mark.Add(s.e.saveEvery())
	select {
	case s.e.saveTick <- struct{}{}:
	default:
	}
}

// begin starts a tick: its time, and the mark the first read's duration
// counts from.
func (s *sampler) begin() {
	s.mark = time.Now()
	s.began, s.skipped = s.mark, 0
	if !s.real {
		s.began = s.e.clock.Now()
	}
}

// lap reads the clock after a backend call that began at mark: the time
// it returned and how long it took; one clock read with the system clock.
func (s *sampler) lap(mark time.Time) (done time.Time, took time.Duration) {
	t := time.Now()
	if !s.real {
		return s.e.clock.Now(), t.Sub(mark)
	}
	return t, t.Sub(mark)
}

// readFast reads GPU i's power into the tick; false when the read was
// left to this goroutine (it then folds it in alone).
func (s *sampler) readFast(gen uint64, i int) bool {
	busy := gen<<32 | readFast | uint64(i+1)
	mark := s.mark // before the store: the loop's state is handed over after it
	s.reading.Store(busy)
	smp, err := s.e.backend.Sample(i)
	done, took := s.lap(mark)
	if err == nil && smp.Time.IsZero() {
		smp.Time = done
	}
	if s.firstDone != nil && !s.answered[i].Load() && s.answered[i].CompareAndSwap(false, true) {
		s.firstDone()
	}
	if !s.reading.CompareAndSwap(busy, gen<<32) {
		s.e.lateFast(i, fastRead{ok: true, s: smp, err: err, took: took, done: s.e.off(done)})
		s.stuck[i].Store(false)
		return false
	}
	s.fast[i] = fastRead{ok: true, s: smp, err: err, took: took, done: s.e.off(done)}
	s.mark, s.last = mark.Add(took), done
	return true
}

// readSlow reads GPU i's slow metrics into the tick, as readFast.
func (s *sampler) readSlow(gen uint64, i int) bool {
	busy := gen<<32 | readSlow | uint64(i+1)
	mark := s.mark // before the store: the loop's state is handed over after it
	s.reading.Store(busy)
	res, err := s.e.backend.SlowSample(i)
	done, took := s.lap(mark)
	if !s.reading.CompareAndSwap(busy, gen<<32) {
		s.e.applySlowLocked(i, res, err)
		s.stuck[i].Store(false)
		return false
	}
	s.slow[i] = slowRead{ok: true, s: res, err: err}
	s.mark, s.last = mark.Add(took), done
	due, slowEvery := s.e.off(s.began), int64(s.e.cfg.SlowInterval)
	switch n := int64(len(s.nextSlow)); {
	case s.nextSlow[i] == 0: // the first: spread the GPUs over the interval
		s.nextSlow[i] = due + slowEvery + slowEvery*int64(i)/n
	case s.nextSlow[i]+slowEvery <= due:
		s.nextSlow[i] = due + slowEvery
	default:
		s.nextSlow[i] += slowEvery
	}
	return true
}

// apply folds the tick's reads into the state under one lock, advances
// the runs, and counts the ticks missed: every GPU skipped, and for each
// GPU read, every whole interval from the tick to the end of the reads (a
// slow read, a wait on the lock, a late start).
func (s *sampler) apply() {
	e := s.e
	end := s.last
	if end.IsZero() || end.Before(s.began) { // no GPU read this tick
		end, _ = s.lap(s.mark)
	}
	e.followWall(end)
	now := e.off(end)
	read := uint64(0)
	e.mu.Lock()
	for i := range s.fast {
		if r := &s.fast[i]; r.ok {
			read++
			e.applyFast(i, r)
		}
		if r := &s.slow[i]; r.ok {
			e.applySlow(i, r.s, r.err)
		}
	}
	e.overruns += s.skipped
	if s.p != nil {
		if late := s.mark.Sub(s.tickAt); late > s.every {
			e.overruns += uint64(late/s.every) * read
		}
	}
	e.advance(now)
}

// advance checks for hung GPUs and moves the runs on to offset now, then
// releases e.mu (held on entry), freezes settled runs and asks for a save
// when a run ended.
func (e *Exporter) advance(now int64) {
	e.checkStalls(now)
	e.lc.Observe(now)
	e.logEvents()
	changed := e.lc.takeChanged()
	e.mu.Unlock()
	e.freezeRunsAt(now)
	if changed {
		e.requestSave()
	}
}

// applyFast folds GPU i's fast read r into the state. Called with e.mu
// held.
func (e *Exporter) applyFast(i int, r *fastRead) {
	g := e.gpus[i]
	if g.took == nil || g.tookUUID != g.dev.UUID {
		g.took, g.tookUUID = e.sampleDuration.WithLabelValues(g.idx, g.dev.UUID), g.dev.UUID
	}
	g.took.Observe(r.took.Seconds())
	g.attempts++
	g.lastDone = r.done
	e.applySample(i, g, r.s, r.err)
}

// lateFast folds in GPU i's fast read that returned after the loop went
// on without it.
func (e *Exporter) lateFast(i int, r fastRead) {
	e.mu.Lock()
	e.applyFast(i, &r)
	e.advance(r.done)
}

// SampleOnce reads every GPU once, one after the other, and updates energy,
// phases and release detection: one tick of the sampling loop, without
// its slow reads. Tests and benchmarks call it directly (with a fake
// clock), never while Start's loop runs.
func (e *Exporter) SampleOnce() {
	s := e.smp
	s.begin()
	for i := range s.fast {
		s.slow[i].ok = false
		s.readFast(s.reading.Load()>>32, i)
	}
	s.apply()
}

// SampleSlowOnce reads every GPU's slow metrics once, one after the other.
// Start's loop reads each GPU's every SlowInterval.
func (e *Exporter) SampleSlowOnce() {
	for i := range e.gpus {
		res, err := e.backend.SlowSample(i)
		e.applySlowLocked(i, res, err)
	}
}

// applySlowLocked is applySlow taking e.mu.
func (e *Exporter) applySlowLocked(i int, res gpu.SlowSample, err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.applySlow(i, res, err)
}

// applySlow folds GPU i's slow read into the state. Called with e.mu held.
func (e *Exporter) applySlow(i int, res gpu.SlowSample, err error) {
	g := e.gpus[i]
	if err != nil {
		g.errors[errSlow]++
		e.log.Debug("GPU slow sample failed", "gpu", i, "uuid", g.dev.UUID, "err", err)
		return
	}
	g.slow, g.hasSlow = res, true
	e.lc.Slow(i, res)
}

// hungGPUs lists the GPUs whose read has not returned.
func (e *Exporter) hungGPUs() []int {
	var out []int
	s := e.smp
	cur := int(s.reading.Load()&readGPU) - 1
	for i := range s.stuck {
		if s.stuck[i].Load() || i == cur {
			out = append(out, i)
		}
	}
	return out
}
