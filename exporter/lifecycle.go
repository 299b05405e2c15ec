package exporter

import (
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/joulemark/joulemark/internal/contract"
	"github.com/joulemark/joulemark/internal/gpu"
	"github.com/joulemark/joulemark/internal/phaseapi"
)

// lifecycle is the runs' state machine: their phases, boundaries, idle
// statistics and release detection. It is fed the sampler's readings
// (Sample, Slow, then Observe with the instant) and the API's requests
// (StartPhase, EngineExited, End), all with their times passed in as
// offsets; it takes no lock and does no HTTP, file I/O or logging. The
// Exporter holds e.mu around every call, persists what it reports changed
// (takeChanged, the run ids a StartPhase created) and logs its events
// (takeEvents).
type lifecycle struct {
	cfg    Config
	anchor *atomic.Int64 // offset 0 in unix nanoseconds (events); re-anchored on a clock step
	gpus   []*gpuState   // the sampler's state, read only here
	// hostNow reads the host's zones at a new boundary (nil: no host
	// metering); stalled says a GPU's read hangs (nil: never).
	hostNow func() []float64
	stalled func(g *gpuState, now int64) bool

	runs     map[string]*run
	finished []string // ended run IDs, oldest first
	pending  []*boundary
	// seen holds every run id accepted (durable with a storage path);
	// seenOrder is the same in acceptance order.
	seen      map[string]struct{}
	seenOrder []string
	changed   bool    // a run ended since takeChanged: save the active runs
	evicted   uint64  // frozen runs evicted (--run.max-kept): their series left /metrics
	events    []event // since takeEvents
}

// event is a transition the lifecycle reports, for the log.
type event struct {
	level slog.Level
	msg   string
	args  []any // slog key-value pairs
}

func newLifecycle(cfg Config, gpus []*gpuState, anchor *atomic.Int64) *lifecycle {
	return &lifecycle{cfg: cfg, anchor: anchor, gpus: gpus, runs: map[string]*run{}, seen: map[string]struct{}{}}
}

// note reports an event.
func (l *lifecycle) note(level slog.Level, msg string, args ...any) {
	l.events = append(l.events, event{level: level, msg: msg, args: args})
}

// takeEvents returns the events since the last call.
func (l *lifecycle) takeEvents() []event {
	ev := l.events
	l.events = nil
	return ev
}

// unix converts an offset to unix seconds.
func (l *lifecycle) unix(off int64) float64 { return float64(l.anchor.Load()+off) / 1e9 }

// wall is an offset as a UTC time, for logs.
func (l *lifecycle) wall(off int64) time.Time { return time.Unix(0, l.anchor.Load()+off).UTC() }

// takeChanged reports whether a run ended since the last call.
func (l *lifecycle) takeChanged() bool {
	c := l.changed
	l.changed = false
	return c
}

// Run is run id, nil when not kept.
func (l *lifecycle) Run(id string) *run { return l.runs[id] }

// Used reports whether run id was accepted before (kept or not).
func (l *lifecycle) Used(id string) bool {
	_, used := l.seen[id]
	return used
}

// Sample feeds GPU i's fast power sample p (already folded into the GPU's
// state) to the runs.
func (l *lifecycle) Sample(i int, p float64) {
	for _, r := range l.runs {
		r.onSample(i, p)
	}
}

// Slow feeds GPU i's slow sample to the runs.
func (l *lifecycle) Slow(i int, s gpu.SlowSample) {
	for _, r := range l.runs {
		r.onSlow(i, s)
	}
}

// Observe advances the runs to now after a sample: pending boundaries
// resolve, release detection runs on every run in its release phase, and
// the runs active longer than RunMaxAge end.
func (l *lifecycle) Observe(now int64) {
	l.resolvePending()
	for _, r := range l.runs {
		if r.active(contract.Release) && r.rel.state == phaseapi.ReleaseWaiting {
			l.checkRelease(r, now)
		}
		if !r.ended && len(r.phases) > 0 && time.Duration(now-r.phases[0].start.t) >= l.cfg.RunMaxAge {
			l.expire(r, now)
		}
	}
}

// recordRunID adds id to the run ids seen, in memory.
func (l *lifecycle) recordRunID(id string) {
	l.seen[id] = struct{}{}
	l.seenOrder = append(l.seenOrder, id)
}

// forgetRunIDs drops the run ids accepted after the first n.
func (l *lifecycle) forgetRunIDs(n int) {
	for _, id := range l.seenOrder[n:] {
		delete(l.seen, id)
	}
	l.seenOrder = l.seenOrder[:n]
}

// startEvent says what a StartPhase changed besides the phase.
type startEvent struct {
	created  bool // a new run: its id was recorded (persist the run ids)
	selected bool // the run's GPU selection was set
}

// StartPhase starts phase p of run id at now, ending the previous phase at
// the same instant. pick and sel are the GPUs the phase's selector chose
// and the selector (nil: none given); absent, when set, says why the
// selector's pod holds no GPU here (pick is nil then).
func (l *lifecycle) StartPhase(id string, p contract.Phase, now int64, pick []bool, sel *phaseapi.Selector, absent error) (*run, startEvent, error) {
	var ev startEvent
	r, created, err := l.startPhase(id, p, now)
	ev.created = created
	if err != nil {
		return r, ev, err
	}
	if absent != nil {
		return r, ev, l.awaitPod(r, p, sel, absent)
	}
	ev.selected, err = l.selectGPUs(r, pick, sel)
	l.syncFailGaps()
	return r, ev, err
}

// awaitPod handles phase p of run r whose selector's pod holds no GPU here
// (absent says so, naming the pods that do): a lifecycle's idle phase
// starts the run pending (its engine's pod starts later) and its startup
// keeps waiting; a run already selected has lost its pod (the engine
// stopped: release). Any other phase is refused: a warm-up or formal
// phase never measures GPUs other than its engine's pod's.
func (l *lifecycle) awaitPod(r *run, p contract.Phase, sel *phaseapi.Selector, absent error) error {
	switch {
	case r.selected:
		return nil
	case r.selector == nil && len(r.phases) == 1 && p == contract.Idle:
		r.selector = sel
		l.note(slog.LevelInfo, "run waits for its pod to hold GPUs here; it measures every GPU until then", "run_id", r.id, "pod", sel.Pod)
		return nil
	case r.pending() && p == contract.Startup:
		return nil
	}
	return absent
}

// startPhase is StartPhase without the selection.
func (l *lifecycle) startPhase(id string, p contract.Phase, now int64) (r *run, created bool, err error) {
	r = l.runs[id]
	if r == nil {
		if r, err = l.newRun(id); err != nil {
			return nil, false, err
		}
		created = true
	}
	if r.ended {
		return r, created, errf(errConflict, "run %s has ended; start a new run ID", id)
	}
	cur := r.current()
	if cur != nil && cur.phase == p && cur.end == nil {
		return r, created, nil // a retried POST: the phase started at the first one
	}
	if cur != nil && p.Index() <= cur.phase.Index() {
		return r, created, errf(errConflict, "run %s is in phase %s; %s cannot follow it (order: idle, startup, warmup, formal, release)", id, cur.phase, p)
	}
	b := l.newBoundary(r, now)
	if cur != nil {
		cur.end = b
	}
	r.phases = append(r.phases, &phaseRec{phase: p, start: b})
	if p == contract.Release {
		r.rel.state = phaseapi.ReleaseWaiting
	}
	l.note(slog.LevelInfo, "phase started", "run_id", id, "phase", p, "at", l.wall(now))
	return r, created, nil
}

// newRun accepts run id, new on this exporter, and records its id.
func (l *lifecycle) newRun(id string) (*run, error) {
	if l.Used(id) {
		return nil, errf(errConflict, "run ID %s was used before on this exporter; start a new run ID", id)
	}
	active := 0
	for _, x := range l.runs {
		if !x.ended {
			active++
		}
	}
	if active >= l.cfg.MaxRuns {
		return nil, errf(errTooManyRuns, "%d runs are active (the most this exporter keeps); end one first", active)
	}
	r := &run{id: id, idleAcc: make([]welford, len(l.gpus)), idleProcs: make([]int, len(l.gpus)),
		rel: release{state: phaseapi.ReleaseNotStarted}}
	for i := range r.idleProcs {
		r.idleProcs[i] = -1
	}
	l.recordRunID(id)
	l.runs[id] = r
	return r, nil
}

// selectGPUs sets the GPUs run r measures when its first phase carries a
// selector; a later phase may repeat the same selection, never change it.
// set says the selection was set now.
func (l *lifecycle) selectGPUs(r *run, pick []bool, sel *phaseapi.Selector) (set bool, err error) {
	if sel == nil {
		return false, nil
	}
	if r.pending() && r.selector.Pod != sel.Pod && !phaseapi.MatchPod(r.selector.Pod, sel.Pod) {
		return false, errf(errConflict, "run %s waits for pod %s; a later phase cannot select another (%s)", r.id, r.selector.Pod, sel.Pod)
	}
	if len(r.phases) == 1 && r.gpus == nil && !r.selected || r.pending() {
		r.gpus, r.selected, r.selector = pick, true, sel
		var uuids []string
		for i, g := range l.gpus {
			if pick[i] {
				uuids = append(uuids, g.dev.UUID)
			}
		}
		l.note(slog.LevelInfo, "run measures a subset of the GPUs", "run_id", r.id, "uuids", strings.Join(uuids, ","), "pod", sel.Pod)
		return true, nil
	}
	if !slices.Equal(r.gpus, pick) {
		return false, errf(errConflict, "run %s measures the GPUs its first phase selected; a later phase cannot change them", r.id)
	}
	return false, nil
}

// EngineExited notes the bench's report, at now, that run id's engine
// exited: it meets the release's process criterion at that instant.
func (l *lifecycle) EngineExited(id string, now int64) (*run, error) {
	r := l.runs[id]
	if r == nil {
		return nil, errf(errNotFound, "no run %s on this exporter", id)
	}
	if !r.crit.engineExited {
		r.crit.engineExited, r.crit.engineExitedAt = true, now
		l.note(slog.LevelInfo, "engine exit reported", "run_id", id, "at", l.wall(now))
	}
	return r, nil
}

// End closes run id at now. Ending an ended run changes nothing.
func (l *lifecycle) End(id string, now int64) (*run, error) {
	r := l.runs[id]
	if r == nil {
		return nil, errf(errNotFound, "no run %s on this exporter", id)
	}
	if r.ended {
		return r, nil
	}
	if cur := r.current(); cur != nil && cur.end == nil {
		cur.end = l.newBoundary(r, now)
		if cur.phase == contract.Release && r.rel.state == phaseapi.ReleaseWaiting {
			f := false
			r.rel.state, r.rel.closed = phaseapi.ReleaseTimedOut, &f
			r.rel.reason = "run ended through the API before power came back to the idle baseline"
		}
	}
	l.finishRun(r, contract.EndReasonAPI)
	l.note(slog.LevelInfo, "run ended", "run_id", id, "at", l.wall(now))
	return r, nil
}

func (l *lifecycle) finishRun(r *run, reason string) {
	r.ended, r.endReason = true, reason
	l.changed = true
	l.finished = append(l.finished, r.id)
	for len(l.finished) > l.cfg.MaxRuns {
		if old := l.runs[l.finished[0]]; old != nil && old.frozen != nil {
			l.evicted++
		}
		delete(l.runs, l.finished[0])
		l.finished = l.finished[1:]
	}
}

// expire ends run r, active longer than RunMaxAge (a client that died
// without ending it), so it never holds an active slot for good.
func (l *lifecycle) expire(r *run, now int64) {
	if cur := r.current(); cur.end == nil {
		cur.end = l.newBoundary(r, now)
	}
	if r.rel.state == phaseapi.ReleaseWaiting {
		f := false
		r.rel.state, r.rel.closed, r.rel.holding = phaseapi.ReleaseTimedOut, &f, false
		r.rel.reason = fmt.Sprintf("run expired: active longer than %v", l.cfg.RunMaxAge)
	}
	l.finishRun(r, contract.EndReasonExpired)
	l.note(slog.LevelWarn, "run expired: still active after the run max age; ended", "run_id", r.id, "max_age", l.cfg.RunMaxAge)
}

// undo is what a phase POST or an end may change in run id, to take it
// back when it cannot be persisted.
type undo struct {
	id        string
	r         *run // nil: no such run before
	phases    int
	curEnd    *boundary
	rel       release
	gpus      []bool
	selected  bool
	selector  *phaseapi.Selector
	ended     bool
	endReason string
	crit      releaseCriteria // an engine exit reported
	seen      int
	finished  int
}

// undoPoint records run id's state before a change.
func (l *lifecycle) undoPoint(id string) undo {
	u := undo{id: id, r: l.runs[id], seen: len(l.seenOrder), finished: len(l.finished)}
	if r := u.r; r != nil {
		u.phases = len(r.phases)
		if c := r.current(); c != nil {
			u.curEnd = c.end
		}
		u.rel, u.gpus, u.selected, u.selector = r.rel, r.gpus, r.selected, r.selector
		u.ended, u.endReason, u.crit = r.ended, r.endReason, r.crit
	}
	return u
}

// rollback takes back what changed since u; forgot says run ids recorded
// since were dropped (the durable list must be written again). A finished
// run evicted by the change (--run.max-kept) stays evicted.
func (l *lifecycle) rollback(u undo) (forgot bool) {
	if r := u.r; r == nil {
		delete(l.runs, u.id)
	} else {
		r.phases = r.phases[:u.phases]
		if c := r.current(); c != nil {
			c.end = u.curEnd
		}
		r.rel, r.gpus, r.selected, r.selector = u.rel, u.gpus, u.selected, u.selector
		r.ended, r.endReason, r.crit = u.ended, u.endReason, u.crit
	}
	if i := slices.Index(l.finished, u.id); i >= 0 && (u.r == nil || !u.ended) {
		l.finished = slices.Delete(l.finished, i, i+1)
	}
	if len(l.seenOrder) > u.seen {
		l.forgetRunIDs(u.seen)
		return true
	}
	return false
}

// newBoundary makes a boundary of run r at t and resolves what it can
// now; a GPU absent from r takes its counter at the save (absentgpu.go).
func (l *lifecycle) newBoundary(r *run, t int64) *boundary {
	var host []float64
	if l.hostNow != nil {
		host = l.hostNow()
	}
	b := &boundary{t: t, e: make([]float64, len(l.gpus)), ok: make([]bool, len(l.gpus)), left: len(l.gpus), host: host}
	for i, ab := range r.absent {
		b.e[i], b.ok[i] = ab.energy, true
		b.left--
	}
	l.resolve(b)
	if b.left > 0 {
		l.pending = append(l.pending, b)
		if max := 20 * l.cfg.MaxRuns; len(l.pending) > max {
			l.pending = l.pending[len(l.pending)-max:]
		}
	}
	return b
}

func (l *lifecycle) resolve(b *boundary) {
	for i, g := range l.gpus {
		if b.ok[i] {
			continue
		}
		if v, ok := l.outEnergy(i, b.t); ok {
			b.e[i], b.ok[i] = v, true
			b.left--
			continue
		}
		if v, ok := g.ring.energyAt(b.t, g.counter); ok {
			b.e[i], b.ok[i] = v, true
			b.left--
		}
	}
}

func (l *lifecycle) resolvePending() {
	keep := l.pending[:0]
	for _, b := range l.pending {
		l.resolve(b)
		if b.left > 0 {
			keep = append(keep, b)
		}
	}
	clear(l.pending[len(keep):])
	l.pending = keep
}

// phaseEnergy is GPU i's energy over run r's phase ph: exact once both
// boundaries are resolved, up to the latest sample before that; up to the
// save while the GPU is absent from r (absentgpu.go).
func (l *lifecycle) phaseEnergy(r *run, ph *phaseRec, i int) float64 {
	if !ph.start.ok[i] {
		return 0
	}
	end := l.gpus[i].energy
	switch ab := r.absent[i]; {
	case ph.end != nil && ph.end.ok[i]:
		end = ph.end.e[i]
	case ab != nil:
		end = ab.energy
	}
	return math.Max(0, end-ph.start.e[i])
}

// baseline returns each GPU's idle baseline power, or nil until the idle
// phase ended and its energy is resolved on every GPU: the mean of the idle
// phase's power samples, the same field and the same kind of mean as the
// release window (windowPower), so a bias between the power field and the
// energy counter cancels in the release comparison. NaN for a GPU without
// an idle sample.
func (l *lifecycle) baseline(r *run) []float64 {
	ph := r.phase(contract.Idle)
	if ph == nil || ph.end == nil || ph.start.left > 0 || ph.end.left > 0 || ph.end.t <= ph.start.t {
		return nil
	}
	b := make([]float64, len(l.gpus))
	for i := range b {
		switch {
		case !r.measured(i):
		case i < len(r.idleAcc) && r.idleAcc[i].n > 0:
			b[i] = r.idleAcc[i].mean
		default:
			b[i] = math.NaN()
		}
	}
	return b
}

// windowPower is GPU g's mean power over the release window ending at its
// latest sample: the mean of the power samples, not an energy-counter
// difference. A counter updating every ~100 ms, not on the sampler's grid,
// puts 9, 10 or 11 updates in a 1 s window, up to ±10% of the power at
// steady load, more than the ±5% tolerance; the samples carry no such
// staircase.
func (l *lifecycle) windowPower(g *gpuState) float64 {
	if m, n := g.ring.meanPower(g.lastT-int64(l.cfg.ReleaseWindow), g.lastT); n > 0 {
		return m
	}
	return g.lastP
}

// powerWhy says why the power criterion of run r is not met at now (""
// when it is).
func (l *lifecycle) powerWhy(r *run, now int64) (why string) {
	base := l.baseline(r)
	if base == nil {
		return "no idle baseline (the run has no finished idle phase)"
	}
	measured := 0
	defer func() {
		if why == "" && measured == 0 {
			why = "none of the run's GPUs answers (each is in a gap of its own)"
		}
	}()
	for i, g := range l.gpus {
		if !r.measured(i) || r.lost(i) || r.failedGap(i) {
			continue
		}
		measured++
		if !g.healthy || !g.has {
			return fmt.Sprintf("gpu %d unhealthy: %s", i, g.lastErr)
		}
		if l.stalled != nil && l.stalled(g, now) {
			return fmt.Sprintf("gpu %d not sampled for %v (a read hangs)", i, time.Duration(now-g.lastDone))
		}
		if math.IsNaN(base[i]) {
			return fmt.Sprintf("gpu %d has no power sample in the idle phase: no baseline", i)
		}
		p := l.windowPower(g)
		if math.Abs(p-base[i]) > l.cfg.ReleaseTolerance*base[i] {
			return fmt.Sprintf("gpu %d at %.1f W, baseline %.1f W (±%g%%)", i, p, base[i], l.cfg.ReleaseTolerance*100)
		}
	}
	return ""
}

func (l *lifecycle) checkRelease(r *run, now int64) {
	ph := r.current()
	why := l.powerWhy(r, now)
	r.crit.power.set(why == "", now, why)
	l.evalProcess(r, now)
	l.evalMemory(r, now)
	start, last, all := r.holdStart()
	if all {
		r.rel.holding, r.rel.holdStart = true, start
		if time.Duration(now-start) >= l.cfg.ReleaseHold {
			t := true
			ph.end = l.newBoundary(r, start)
			r.rel.state, r.rel.closed, r.rel.reason = phaseapi.ReleaseClosed, &t, ""
			r.crit.closedBy = last
			l.finishRun(r, contract.EndReasonReleaseClosed)
			l.note(slog.LevelInfo, "release closed: engine gone, memory and power back at idle", "run_id", r.id, "end", l.wall(start), "closed_by", last, "process_basis", r.crit.processBasis)
			return
		}
	} else {
		r.rel.holding = false
		var whys []string
		for _, c := range []criterion{r.crit.process, r.crit.memory, r.crit.power} {
			if !c.met {
				whys = append(whys, c.why)
			}
		}
		why = strings.Join(whys, "; ")
		r.rel.reason = why
	}
	if time.Duration(now-ph.start.t) >= l.cfg.ReleaseMaxWait {
		f := false
		ph.end = l.newBoundary(r, now)
		r.rel.state, r.rel.closed, r.rel.holding = phaseapi.ReleaseTimedOut, &f, false
		if why == "" {
			why = "hold not complete"
		}
		r.rel.reason = fmt.Sprintf("release not closed within %v: %s", l.cfg.ReleaseMaxWait, why)
		l.finishRun(r, contract.EndReasonReleaseTimedOut)
		l.note(slog.LevelWarn, "release not closed", "run_id", r.id, "reason", r.rel.reason)
	}
}
