package simengine

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/joulemark/joulemark/internal/gpu"
)

// LoadSink receives the engine's load and state as they change: the
// in-process coupling to simulated GPUs, so that power follows work.
// SetLoad gets the current step's load in [0, 1]: its power above idle
// as a share of the GPUs' range (Config.Power; 0 when idle). Calls come from one
// goroutine at a time, never under the engine's lock.
type LoadSink interface {
	SetLoad(ratio float64)
	SetEngineState(s gpu.EngineState)
}

// MemorySink is a LoadSink that also keeps the engine's memory (the
// simulated GPUs do): New tells it once.
type MemorySink interface {
	SetMemory(m gpu.SimMemory)
}

// Simulated GPUs follow the engine in-process.
var _ LoadSink = (*gpu.Sim)(nil)

// errNotReady refuses requests while the engine is not running.
var errNotReady = errors.New("engine not ready")

// Engine is one simulated inference engine. Its HTTP API is Handler().
type Engine struct {
	cfg     Config
	sinks   []LoadSink
	created time.Time
	reg     *prometheus.Registry
	m       *metrics

	// sinkMu orders sink calls (the loop's loads and Start/Stop's states).
	sinkMu sync.Mutex

	mu           sync.Mutex
	state        gpu.EngineState
	stopping     bool          // Stop in progress: new requests refused
	ready        chan struct{} // closed when the state becomes running
	startCancel  context.CancelFunc
	loopCancel   context.CancelFunc
	loopDone     chan struct{}
	waiting      []*seq
	running      []*seq
	kvBlocks     int // KV cache blocks in use (KVBlockSize tokens each)
	retracted    int // preemptions of the current step (SGLang's num_retracted_reqs)
	retractedNow int
	load         float64
	nextID       uint64
	rng          *rand.Rand
	faultLog     []FaultEvent
	wake         chan struct{}
}

// FaultEvent is one injected fault, for tests and the demo's checks.
type FaultEvent struct {
	RequestID string
	Kind      string // error, stall, truncate, slow_first_token
	Arrival   time.Time
}

// maxFaultLog bounds the fault log.
const maxFaultLog = 1 << 16

// seq is one request's sequence. Fields below "engine-owned" are guarded by
// Engine.mu.
type seq struct {
	id         string
	created    int64
	arrival    time.Time
	prompt     int
	target     int    // completion tokens it will produce
	finishAt   string // finish reason at target: stop or length
	seed       uint64
	stallAt    int // token after which it stalls once; 0 for none
	truncateAt int // tokens sent before the response is cut; -1 for none
	slowFirst  bool

	// engine-owned
	admitted    bool
	prefilled   bool
	prefillDone int // tokens prefilled so far, of prefillLen
	prefillLen  int // the prompt, plus the tokens generated before a preemption (recomputed)
	blocks      int // KV cache blocks held
	holdUntil   time.Time
	generated   int
	finish      string // set when the sequence ends: stop, length, abort
	cancelled   bool
	firstToken  time.Time
	notify      chan struct{} // capacity 1, signalled on progress
}

// New returns a stopped engine. Sinks (e.g. simulated GPUs) follow its load
// and state.
func New(cfg Config, sinks ...LoadSink) (*Engine, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("simengine config: %w", err)
	}
	e := &Engine{
		cfg:     cfg,
		sinks:   sinks,
		created: time.Now(),
		reg:     prometheus.NewRegistry(),
		rng:     rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x6a6f756c656d6172)),
		wake:    make(chan struct{}, 1),
		ready:   make(chan struct{}),
	}
	m, err := newMetrics(e)
	if err != nil {
		return nil, err
	}
	e.m = m
	for _, k := range sinks {
		if m, ok := k.(MemorySink); ok {
			m.SetMemory(cfg.Memory)
		}
	}
	return e, nil
}

// Config is the engine's configuration.
func (e *Engine) Config() Config { return e.cfg }

// Registry holds the engine's metrics (served on /metrics).
func (e *Engine) Registry() *prometheus.Registry { return e.reg }

// State is the current lifecycle state.
func (e *Engine) State() gpu.EngineState {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.state
}

// Serving reports whether the engine accepts requests (running, not
// stopping): what /health answers.
func (e *Engine) Serving() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.state == gpu.EngineRunning && !e.stopping
}

// Load is the current step's load on the GPUs in [0, 1] (Config.Power).
func (e *Engine) Load() float64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.load
}

// FaultLog returns the faults injected so far, in arrival order.
func (e *Engine) FaultLog() []FaultEvent {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]FaultEvent(nil), e.faultLog...)
}

// Start begins loading weights and returns at once: the engine serves after
// StartupDelay. Starting a loading or running engine is an error.
func (e *Engine) Start() error {
	e.mu.Lock()
	if e.state != gpu.EngineStopped || e.startCancel != nil {
		st := e.state
		e.mu.Unlock()
		return fmt.Errorf("simengine start: engine is %s", st)
	}
	ctx, cancel := context.WithCancel(context.Background())
	e.startCancel = cancel
	e.state = gpu.EngineLoading
	select {
	case <-e.ready: // closed by an earlier start: a new one for this start
		e.ready = make(chan struct{})
	default: // never closed: keep it, WaitReady callers may hold it
	}
	ready := e.ready
	e.mu.Unlock()
	e.publishState(gpu.EngineLoading)

	go func() {
		t := time.NewTimer(e.cfg.StartupDelay)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		e.mu.Lock()
		if ctx.Err() != nil { // stopped while the timer fired
			e.mu.Unlock()
			return
		}
		lctx, lcancel := context.WithCancel(context.Background())
		e.loopCancel = lcancel
		e.loopDone = make(chan struct{})
		e.state = gpu.EngineRunning
		e.startCancel = nil
		go e.loop(lctx, e.loopDone)
		e.mu.Unlock()
		e.publishState(gpu.EngineRunning)
		close(ready)
	}()
	return nil
}

// WaitReady blocks until the engine serves or ctx ends. Called before
// Start, it waits for the coming start.
func (e *Engine) WaitReady(ctx context.Context) error {
	e.mu.Lock()
	ready := e.ready
	e.mu.Unlock()
	select {
	case <-ready:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("simengine: waiting for ready: %w", ctx.Err())
	}
}

// Stop aborts every request (finish_reason "abort"), refuses new ones, frees
// the GPUs after ShutdownDelay and returns once stopped. Stopping a stopped
// engine does nothing. If ctx ends during the shutdown delay the engine is
// marked stopped at once and ctx's error returned.
func (e *Engine) Stop(ctx context.Context) error {
	e.mu.Lock()
	switch {
	case e.state == gpu.EngineStopped:
		e.mu.Unlock()
		return nil
	case e.stopping:
		e.mu.Unlock()
		return errors.New("simengine stop: already stopping")
	case e.startCancel != nil: // still loading
		e.startCancel()
		e.startCancel = nil
	}
	wasRunning := e.state == gpu.EngineRunning
	loopCancel, loopDone := e.loopCancel, e.loopDone
	e.loopCancel, e.loopDone = nil, nil
	// Refuse new requests from here on; the state stays until the GPU
	// memory is freed.
	e.stopping = true
	e.mu.Unlock()

	if loopCancel != nil {
		loopCancel()
		<-loopDone
	}
	e.mu.Lock()
	for _, s := range append(e.waiting, e.running...) {
		if s.finish == "" {
			s.finish = "abort"
			e.m.aborted.Inc()
			signal(s.notify)
		}
	}
	e.waiting, e.running = nil, nil
	e.kvBlocks, e.load = 0, 0
	e.mu.Unlock()
	e.publishLoad(0)

	var err error
	if wasRunning {
		t := time.NewTimer(e.cfg.ShutdownDelay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			err = fmt.Errorf("simengine stop: shutdown delay cut short: %w", ctx.Err())
		}
	}
	e.mu.Lock()
	e.state, e.stopping = gpu.EngineStopped, false
	select {
	case <-e.ready: // WaitReady now waits for the next start
		e.ready = make(chan struct{})
	default:
	}
	e.mu.Unlock()
	e.publishState(gpu.EngineStopped)
	return err
}

func (e *Engine) publishState(s gpu.EngineState) {
	e.sinkMu.Lock()
	defer e.sinkMu.Unlock()
	for _, k := range e.sinks {
		k.SetEngineState(s)
	}
}

func (e *Engine) publishLoad(l float64) {
	e.sinkMu.Lock()
	defer e.sinkMu.Unlock()
	for _, k := range e.sinks {
		k.SetLoad(l)
	}
}

// request is what a handler submits.
type request struct {
	prompt    int
	maxTokens int // completion tokens at most
	minTokens int
	ignoreEOS bool
	seed      *int64
	chat      bool
}

// submit queues a sequence, or returns errFault / errNotReady.
func (e *Engine) submit(r request) (*seq, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.state != gpu.EngineRunning || e.stopping {
		return nil, errNotReady
	}
	e.nextID++
	prefix := "cmpl-"
	if r.chat {
		prefix = "chatcmpl-"
	}
	now := time.Now()
	s := &seq{
		id:         fmt.Sprintf("%s%016x", prefix, splitmix64(e.cfg.Seed^e.nextID)),
		created:    now.Unix(),
		arrival:    now,
		prompt:     r.prompt,
		target:     r.maxTokens,
		finishAt:   "length",
		truncateAt: -1,
		notify:     make(chan struct{}, 1),
	}
	if r.seed != nil {
		s.seed = splitmix64(uint64(*r.seed))
	} else {
		s.seed = splitmix64(e.cfg.Seed + e.nextID)
	}
	if !r.ignoreEOS && e.cfg.EOSMeanTokens > 0 {
		// Geometric completion length with the configured mean; EOS is
		// suppressed before min_tokens.
		p := 1 / math.Max(e.cfg.EOSMeanTokens, 1)
		n := 1
		if p < 1 {
			n += int(math.Floor(math.Log(1-e.rng.Float64()) / math.Log(1-p)))
		}
		if l := max(r.minTokens, 1) + n - 1; l < s.target {
			s.target, s.finishAt = l, "stop"
		}
	}
	s.prefillLen = s.prompt

	f := e.cfg.Faults
	if f.ErrorRate > 0 && e.rng.Float64() < f.ErrorRate {
		e.logFault(s, "error")
		return nil, errFault
	}
	if f.TruncateRate > 0 && e.rng.Float64() < f.TruncateRate {
		s.truncateAt = e.rng.IntN(s.target)
		e.logFault(s, "truncate")
	}
	if f.StallRate > 0 && s.target >= 2 && e.rng.Float64() < f.StallRate {
		s.stallAt = 1 + e.rng.IntN(s.target-1)
		e.logFault(s, "stall")
	}
	if f.SlowFirstTokenRate > 0 && e.rng.Float64() < f.SlowFirstTokenRate {
		s.slowFirst = true
		e.logFault(s, "slow_first_token")
	}
	e.waiting = append(e.waiting, s)
	signal(e.wake)
	return s, nil
}

// errFault is an injected request error.
var errFault = errors.New("simulated internal error (fault injection)")

func (e *Engine) logFault(s *seq, kind string) {
	e.m.faults.WithLabelValues(kind).Inc()
	if len(e.faultLog) < maxFaultLog {
		e.faultLog = append(e.faultLog, FaultEvent{RequestID: s.id, Kind: kind, Arrival: s.arrival})
	}
}

// cancel drops a sequence whose client went away (or whose response was cut).
func (e *Engine) cancel(s *seq) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if s.finish == "" && !s.cancelled {
		s.cancelled = true
		e.m.aborted.Inc()
		signal(e.wake)
	}
}

// progress is a sequence's generated tokens and finish reason.
func (e *Engine) progress(s *seq) (generated int, finish string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return s.generated, s.finish
}

// loop is the scheduler: each iteration admits waiting sequences (batch and
// KV cache permitting), runs one step (prefill of the newly admitted plus one
// decode token for every other sequence) and publishes the tokens.
func (e *Engine) loop(ctx context.Context, done chan<- struct{}) {
	defer close(done)
	hold := time.NewTimer(time.Hour)
	defer hold.Stop()
	var stepEnd time.Time
	for {
		e.mu.Lock()
		st := e.planStepLocked(time.Now())
		if st.size() == 0 {
			e.setLoadLocked(0)
			if !e.idle(ctx, hold, st.nextHold) {
				return
			}
			stepEnd = time.Time{}
			continue
		}
		d := e.stepDuration(st)
		e.retractedNow, e.retracted = e.retracted, 0
		e.setLoadLocked(e.cfg.Power.Load(st.prefillTokens, len(st.decode)+st.firstTokens(), d))

		// Steps follow each other back to back on a virtual timeline: a
		// late wake-up (the host's scheduling) is made up by the next
		// steps, so the engine's token rate does not depend on the host.
		// Beyond maxCatchUp behind (a stopped process) it starts afresh.
		if stepEnd.IsZero() || time.Since(stepEnd) > maxCatchUp {
			stepEnd = time.Now()
		}
		stepEnd = stepEnd.Add(d)
		if w := time.Until(stepEnd); w > 0 {
			hold.Reset(w)
			select {
			case <-ctx.Done():
				return
			case <-hold.C:
			}
		}

		e.mu.Lock()
		e.finishStepLocked(st, time.Now())
		e.mu.Unlock()
	}
}

// maxCatchUp is how far behind its virtual timeline the scheduler may fall
// and still make the time up with back-to-back steps.
const maxCatchUp = time.Second

// step is what one scheduler step runs.
type step struct {
	decode        []*seq         // one decode token each
	prefill       []prefillChunk // prompt chunks, in admission order
	prefillTokens int
	nextHold      time.Time // earliest end of a held sequence's hold; zero for none
}

// size is the number of sequences the step runs.
func (st step) size() int { return len(st.prefill) + len(st.decode) }

// firstTokens is the tokens the step samples at the end of a prefill.
func (st step) firstTokens() int {
	n := 0
	for _, c := range st.prefill {
		if c.s.prefillDone+c.tokens >= c.s.prefillLen {
			n++
		}
	}
	return n
}

// planStepLocked drops cancelled sequences, admits waiting ones and plans
// the next step. Chunked prefill: decode tokens first, then prompt chunks in
// admission order up to the step's token budget.
func (e *Engine) planStepLocked(now time.Time) step {
	e.dropCancelledLocked()
	e.admitLocked(now)
	e.growLocked()
	var st step
	var waitingPrefill []*seq
	for _, s := range e.running {
		if now.Before(s.holdUntil) {
			if st.nextHold.IsZero() || s.holdUntil.Before(st.nextHold) {
				st.nextHold = s.holdUntil
			}
			continue
		}
		if s.prefilled {
			st.decode = append(st.decode, s)
		} else {
			waitingPrefill = append(waitingPrefill, s)
		}
	}
	budget := e.cfg.MaxNumBatchedTokens - len(st.decode)
	if e.cfg.MaxNumBatchedTokens == 0 {
		budget = math.MaxInt
	}
	for _, s := range waitingPrefill {
		left := s.prefillLen - s.prefillDone
		if left > 0 && budget <= 0 {
			break
		}
		c := min(left, budget)
		budget -= c
		st.prefillTokens += c
		st.prefill = append(st.prefill, prefillChunk{s, c})
	}
	return st
}

// stepDuration is how long the step takes on the simulated GPU.
func (e *Engine) stepDuration(st step) time.Duration {
	return e.cfg.DecodeBase + time.Duration(len(st.decode))*e.cfg.DecodePerSeq +
		time.Duration(st.prefillTokens)*e.cfg.PrefillPerToken
}

// setLoadLocked sets the load, unlocks e.mu and publishes the load to the
// sinks when it changed.
func (e *Engine) setLoadLocked(load float64) {
	changed := load != e.load
	e.load = load
	e.mu.Unlock()
	if changed {
		e.publishLoad(load)
	}
}

// idle waits for a new request, the end of the earliest hold (nextHold,
// zero for none) or ctx; false when ctx is done.
func (e *Engine) idle(ctx context.Context, hold *time.Timer, nextHold time.Time) bool {
	wait := time.Hour
	if !nextHold.IsZero() {
		wait = time.Until(nextHold)
	}
	hold.Reset(wait)
	select {
	case <-ctx.Done():
		return false
	case <-e.wake:
	case <-hold.C:
	}
	hold.Stop()
	return true
}

// finishStepLocked applies the step at now: prefill progress, the step's
// tokens, and the removal of finished sequences from the batch.
func (e *Engine) finishStepLocked(st step, now time.Time) {
	for _, c := range st.prefill {
		s := c.s
		if s.cancelled {
			continue
		}
		s.prefillDone += c.tokens
		e.m.promptTokens.Add(float64(c.tokens))
		if s.prefillDone >= s.prefillLen {
			// The step that ends the prefill samples the first token.
			s.prefilled = true
			e.emitLocked(s, now)
		}
	}
	for _, s := range st.decode {
		if !s.cancelled {
			e.emitLocked(s, now)
		}
	}
	kept := e.running[:0]
	for _, s := range e.running {
		if s.finish == "" {
			kept = append(kept, s)
		}
	}
	clear(e.running[len(kept):])
	e.running = kept
}

// KVBlockSize is the tokens of one KV cache block (vLLM's default
// --block-size).
const KVBlockSize = 16

// blocksFor is the KV cache blocks n tokens occupy.
func blocksFor(n int) int { return (n + KVBlockSize - 1) / KVBlockSize }

// kvCapacity is the KV cache's size in blocks.
func (e *Engine) kvCapacity() int { return e.cfg.KVCacheTokens / KVBlockSize }

// admitLocked moves waiting sequences into the batch while it has room and
// the KV cache has free blocks for the tokens they prefill (first come,
// first served; a preempted sequence is first in line), as vLLM's
// scheduler does. Blocks for generated tokens are taken as they come
// (growLocked).
func (e *Engine) admitLocked(now time.Time) {
	for len(e.waiting) > 0 && len(e.running) < e.cfg.MaxBatch {
		s := e.waiting[0]
		need := blocksFor(s.prefillLen + 1)
		if e.kvBlocks+need > e.kvCapacity() {
			break
		}
		e.waiting[0] = nil
		e.waiting = e.waiting[1:]
		e.kvBlocks += need
		s.blocks = need
		if !s.admitted && s.slowFirst {
			s.holdUntil = now.Add(e.cfg.Faults.SlowFirstTokenDelay)
		}
		s.admitted = true
		e.running = append(e.running, s)
	}
}

// growLocked gives every decoding sequence the block its next token needs;
// when the cache is full it preempts the most recently admitted sequence
// (vLLM's recompute preemption): its blocks are freed and it goes back to
// the head of the queue, to prefill its prompt and the tokens it had
// generated again.
func (e *Engine) growLocked() {
	for i := 0; i < len(e.running); i++ {
		s := e.running[i]
		if !s.prefilled {
			continue
		}
		need := blocksFor(s.prompt+s.generated+1) - s.blocks
		for need > 0 && e.kvBlocks+need > e.kvCapacity() {
			victim := e.running[len(e.running)-1]
			e.preemptLocked(victim)
			if victim == s {
				need = 0
				i--
			}
		}
		if need > 0 {
			e.kvBlocks += need
			s.blocks += need
		}
	}
}

// preemptLocked takes the last running sequence out of the batch.
func (e *Engine) preemptLocked(s *seq) {
	e.running[len(e.running)-1] = nil
	e.running = e.running[:len(e.running)-1]
	e.kvBlocks -= s.blocks
	s.blocks = 0
	s.prefilled, s.prefillDone, s.prefillLen = false, 0, s.prompt+s.generated
	e.waiting = append([]*seq{s}, e.waiting...)
	e.m.preemptions.Inc()
	e.retracted++
}

// dropCancelledLocked removes cancelled sequences and frees their cache.
func (e *Engine) dropCancelledLocked() {
	kept := e.waiting[:0]
	for _, s := range e.waiting {
		if !s.cancelled {
			kept = append(kept, s)
		}
	}
	clear(e.waiting[len(kept):])
	e.waiting = kept
	kept = e.running[:0]
	for _, s := range e.running {
		if s.cancelled {
			e.releaseLocked(s)
			continue
		}
		kept = append(kept, s)
	}
	clear(e.running[len(kept):])
	e.running = kept
}

func (e *Engine) releaseLocked(s *seq) {
	e.kvBlocks -= s.blocks
	s.blocks = 0
}

// emitLocked gives s its next token.
func (e *Engine) emitLocked(s *seq, now time.Time) {
	s.generated++
	e.m.generationTokens.Inc()
	if s.generated == 1 {
		s.firstToken = now
		e.m.ttft.Observe(now.Sub(s.arrival).Seconds())
	}
	switch {
	case s.generated >= s.target:
		s.finish = s.finishAt
		e.releaseLocked(s)
		if e.m.success != nil {
			e.m.success.WithLabelValues(s.finish).Inc()
		}
		e.m.e2e.Observe(now.Sub(s.arrival).Seconds())
	case s.generated == s.stallAt:
		s.holdUntil = now.Add(e.cfg.Faults.StallDuration)
	}
	signal(s.notify)
}

// prefillChunk is the part of a prompt prefilled in one step.
type prefillChunk struct {
	s      *seq
	tokens int
}

// signal does a non-blocking send on a capacity-1 channel.
func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}
