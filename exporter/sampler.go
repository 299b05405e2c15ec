package exporter

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Start begins sampling until ctx ends or Close: one goroutine per GPU for
// the fast reads and one per GPU for the slow reads, so a GPU whose driver
// call hangs stalls only itself. The exporter is ready once every GPU
// answered its first read, or after stallIntervals intervals. Begin runs
// first when it has not (its error is logged: call Begin to refuse it).
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
		var first sync.WaitGroup
		first.Add(len(e.gpus))
		e.live = make([]atomic.Int32, len(e.gpus))
		for i := range e.gpus {
			e.wg.Add(2)
			e.live[i].Add(2)
			go e.fastLoop(ctx, i, first.Done)
			go e.slowLoop(ctx, i)
		}
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
		e.wg.Go(func() { e.watchLoop(ctx) })
		if e.cfg.Host != nil {
			e.wg.Add(1)
			go e.hostLoop(ctx, e.cfg.Interval)
		}
		if e.attr != nil {
			e.wg.Go(func() { e.attr.run(ctx, e.cfg.SlowInterval) })
		}
		if e.store != nil {
			e.saveReq = make(chan struct{}, 1)
			e.saveDone = make(chan struct{})
			e.wg.Go(func() {
				defer close(e.saveDone)
				e.saveLoop(ctx)
			})
		}
	})
}

// fastLoop reads GPU i every Interval; firstDone is called after its first
// read.
func (e *Exporter) fastLoop(ctx context.Context, i int, firstDone func()) {
	defer e.wg.Done()
	defer e.live[i].Add(-1)
	every := e.cfg.Interval
	e.sampleGPU(i)
	firstDone()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		var tick time.Time
		select {
		case <-ctx.Done():
			return
		case tick = <-t.C:
		}
		e.sampleGPU(i)
		// from the tick to the sample's end: a slow backend call, a wait on
		// the lock, a late start (a starved goroutine); each whole interval
		// past the tick is a tick the ticker dropped
		if took := time.Since(tick); took > every {
			e.mu.Lock()
			e.overruns += uint64(took / every)
			e.mu.Unlock()
		}
	}
}

// watchLoop advances the runs every Interval while a GPU is out or its
// read hangs, so that a hung GPU gets its gap and the runs move on when no
// other GPU's sample does it (every GPU hung).
func (e *Exporter) watchLoop(ctx context.Context) {
	t := time.NewTicker(e.cfg.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		e.mu.Lock()
		nowT := e.clock.Now()
		e.followWall(nowT)
		now := e.off(nowT)
		e.checkStalls(now)
		changed := false
		if slices.ContainsFunc(e.gpus, func(g *gpuState) bool { return g.out }) {
			e.lc.Observe(now)
			e.logEvents()
			changed = e.lc.takeChanged()
		}
		e.mu.Unlock()
		e.freezeRuns()
		if changed {
			e.requestSave()
		}
	}
}

// slowLoop reads GPU i's slow metrics every SlowInterval.
func (e *Exporter) slowLoop(ctx context.Context, i int) {
	defer e.wg.Done()
	defer e.live[i].Add(-1)
	e.sampleSlowGPU(i)
	t := time.NewTicker(e.cfg.SlowInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		e.sampleSlowGPU(i)
	}
}

// SampleOnce reads every GPU once, one after the other, and updates energy,
// phases and release detection. Tests and benchmarks call it directly (with
// a fake clock); Start samples each GPU in its own goroutine instead.
func (e *Exporter) SampleOnce() {
	for i := range e.gpus {
		e.sampleGPU(i)
	}
}

// sampleGPU reads GPU i once and folds the reading into the state.
func (e *Exporter) sampleGPU(i int) {
	g := e.gpus[i]
	g.sampleMu.Lock()
	defer g.sampleMu.Unlock()
	began := time.Now()
	s, err := e.backend.Sample(i)
	took := time.Since(began)
	if err == nil && s.Time.IsZero() {
		s.Time = e.clock.Now()
	}
	nowT := e.clock.Now()
	e.followWall(nowT)
	now := e.off(nowT)
	e.mu.Lock()
	e.sampleDuration.WithLabelValues(g.idx, g.dev.UUID).Observe(took.Seconds())
	g.attempts++
	g.lastDone = now
	e.applySample(i, g, s, err)
	e.checkStalls(now)
	e.lc.Observe(now)
	e.logEvents()
	changed := e.lc.takeChanged()
	e.mu.Unlock()
	e.freezeRuns()
	if changed {
		e.requestSave()
	}
}

// SampleSlowOnce reads every GPU's slow metrics once, one after the other.
// Start reads each GPU's in its own goroutine every SlowInterval.
func (e *Exporter) SampleSlowOnce() {
	for i := range e.gpus {
		e.sampleSlowGPU(i)
	}
}

// sampleSlowGPU reads GPU i's slow metrics once.
func (e *Exporter) sampleSlowGPU(i int) {
	g := e.gpus[i]
	g.slowMu.Lock()
	defer g.slowMu.Unlock()
	res, err := e.backend.SlowSample(i)
	e.mu.Lock()
	defer e.mu.Unlock()
	if err != nil {
		g.errors[errSlow]++
		e.log.Debug("GPU slow sample failed", "gpu", i, "uuid", g.dev.UUID, "err", err)
		return
	}
	g.slow, g.hasSlow = res, true
	e.lc.Slow(i, res)
}
