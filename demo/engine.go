package demo

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/joulemark/joulemark/benchjob"
	"github.com/joulemark/joulemark/internal/gpu"
	"github.com/joulemark/joulemark/internal/simengine"
)

// engineController lets the benchmark start and stop the in-process
// simulated engine as it would launch and stop vLLM.
type engineController struct {
	e *simengine.Engine

	mu  sync.Mutex
	log io.Writer
}

var (
	_ benchjob.Engine      = (*engineController)(nil)
	_ benchjob.LogCapturer = (*engineController)(nil)
)

// CaptureLogs sends the engine's lifecycle lines to the run archive.
func (c *engineController) CaptureLogs(w io.Writer) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.log = w
}

func (c *engineController) logf(format string, a ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.log != nil {
		fmt.Fprintf(c.log, "%s %s\n", time.Now().UTC().Format(time.RFC3339Nano), fmt.Sprintf(format, a...))
	}
}

// Start begins loading weights; the benchmark polls /health for readiness.
func (c *engineController) Start(context.Context) error {
	cfg := c.e.Config()
	c.logf("sim-engine: loading %s (startup delay %s, max batch %d, decode %s + %s/seq, prefill %s/token)",
		cfg.Model, cfg.StartupDelay, cfg.MaxBatch, cfg.DecodeBase, cfg.DecodePerSeq, cfg.PrefillPerToken)
	if err := c.e.Start(); err != nil {
		return err
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), cfg.StartupDelay+time.Minute)
		defer cancel()
		if c.e.WaitReady(ctx) == nil {
			c.logf("sim-engine: ready")
		}
	}()
	return nil
}

// Stop aborts what is left, frees the GPUs after the shutdown delay and
// returns once the engine is stopped.
func (c *engineController) Stop(ctx context.Context) error {
	c.logf("sim-engine: stopping (shutdown delay %s)", c.e.Config().ShutdownDelay)
	err := c.e.Stop(ctx)
	c.logf("sim-engine: stopped")
	return err
}

// shapedSink rewrites the load the engine reports before it reaches the
// GPUs (tests use it to make power unsteady while the work is steady).
type shapedSink struct {
	next  simengine.LoadSink
	t0    time.Time
	shape func(elapsed time.Duration, load float64) float64

	mu   sync.Mutex
	last float64
	stop chan struct{}
}

func newShapedSink(next simengine.LoadSink, shape func(time.Duration, float64) float64) *shapedSink {
	s := &shapedSink{next: next, t0: time.Now(), shape: shape, stop: make(chan struct{})}
	// Re-apply the shape every 50 ms, so a time-varying shape moves power
	// even while the engine's load holds still.
	go func() {
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-s.stop:
				return
			case <-t.C:
				s.mu.Lock()
				s.next.SetLoad(s.shape(time.Since(s.t0), s.last))
				s.mu.Unlock()
			}
		}
	}()
	return s
}

func (s *shapedSink) SetLoad(l float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.last = l
	s.next.SetLoad(s.shape(time.Since(s.t0), l))
}

func (s *shapedSink) SetEngineState(st gpu.EngineState) { s.next.SetEngineState(st) }

// SetMemory passes the engine's memory on.
func (s *shapedSink) SetMemory(m gpu.SimMemory) {
	if ms, ok := s.next.(simengine.MemorySink); ok {
		ms.SetMemory(m)
	}
}

func (s *shapedSink) close() { close(s.stop) }
