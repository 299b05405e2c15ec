package exporter

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/joulemark/joulemark/internal/contract"
	"github.com/joulemark/joulemark/internal/gpu"
	"github.com/joulemark/joulemark/internal/phaseapi"
)

// machine drives the lifecycle state machine alone: synthetic samples on
// two GPUs every 100 ms, times passed in, no exporter, clock or goroutine.
type machine struct {
	t   *testing.T
	l   *lifecycle
	now int64
}

const tick = int64(100 * time.Millisecond)

func newMachine(t *testing.T, mod func(*Config)) *machine {
	cfg := Defaults()
	cfg.ReleaseHold, cfg.ReleaseMaxWait = 5*time.Second, 60*time.Second
	if mod != nil {
		mod(&cfg)
	}
	cfg.setDerived()
	var gpus []*gpuState
	for i := range 2 {
		gpus = append(gpus, &gpuState{dev: gpu.Device{Index: i, UUID: fmt.Sprintf("GPU-%d", i)}, idx: strconv.Itoa(i),
			ring: newRing(10_000), healthy: true, errors: map[string]uint64{}})
	}
	m := &machine{t: t, l: newLifecycle(cfg, gpus, new(atomic.Int64))}
	m.slow(0, 1<<30)
	return m
}

// power feeds d of samples at w watts on every GPU, folded as the
// sampler folds them, then observed.
func (m *machine) power(d time.Duration, w float64) {
	for range int64(d) / tick {
		m.now += tick
		for i, g := range m.l.gpus {
			if g.has {
				g.energy += (g.lastP + w) / 2 * float64(tick) / 1e9
			}
			g.has, g.lastT, g.lastP, g.lastDone = true, m.now, w, m.now
			g.ring.push(point{t: m.now, p: w, e: g.energy})
			m.l.Sample(i, w)
		}
		m.l.Observe(m.now)
	}
}

// slow feeds a slow sample: procs compute processes, mem bytes in use.
func (m *machine) slow(procs int, mem float64) {
	for i, g := range m.l.gpus {
		g.slow, g.hasSlow = gpu.SlowSample{ComputeProcesses: procs, MemoryUsedBytes: mem}, true
		m.l.Slow(i, g.slow)
	}
}

func (m *machine) start(id string, p contract.Phase) error {
	_, _, err := m.l.StartPhase(id, p, m.now, nil, nil, nil)
	return err
}

func (m *machine) mustStart(id string, p contract.Phase) {
	m.t.Helper()
	if err := m.start(id, p); err != nil {
		m.t.Fatalf("start %s %s: %v", id, p, err)
	}
}

// toRelease runs run id through idle (100 W), startup, warmup and formal
// (400 W, an engine with 2 processes and 40 GiB) into its release phase.
func (m *machine) toRelease(id string) {
	m.mustStart(id, contract.Idle)
	m.power(10*time.Second, 100)
	for _, p := range []contract.Phase{contract.Startup, contract.Warmup, contract.Formal} {
		m.mustStart(id, p)
		m.slow(2, 40<<30)
		m.power(5*time.Second, 400)
	}
	m.mustStart(id, contract.Release)
}

// apiCode is the HTTP status of a refused request, 0 for none.
func apiCode(err error) int {
	var ae *apiError
	if errors.As(err, &ae) {
		return httpStatus(ae.kind)
	}
	return 0
}

func TestLifecycleMachine(t *testing.T) {
	for _, tc := range []struct {
		name string
		mod  func(*Config)
		run  func(m *machine) *run
		// want: end reason, release state, closed by; phase end (offset
		// from the release start, -1: unchecked)
		reason, state, closedBy string
		relEnd                  time.Duration
	}{
		{name: "closed by power", run: func(m *machine) *run {
			m.toRelease("a")
			m.slow(0, 1<<30) // the engine is gone at once
			m.power(3*time.Second, 400)
			m.power(20*time.Second, 100)
			return m.l.Run("a")
		}, reason: contract.EndReasonReleaseClosed, state: phaseapi.ReleaseClosed, closedBy: phaseapi.CriterionPower, relEnd: 4 * time.Second}, // the 1 s window is all 100 W at 4 s
		{name: "release times out", run: func(m *machine) *run {
			m.toRelease("a")
			m.slow(0, 1<<30) // only power holds it
			m.power(61*time.Second, 400)
			return m.l.Run("a")
		}, reason: contract.EndReasonReleaseTimedOut, state: phaseapi.ReleaseTimedOut, relEnd: 60 * time.Second},
		{name: "engine exit reported", mod: func(c *Config) { c.ReleaseRequireEngineExit = true }, run: func(m *machine) *run {
			m.toRelease("a")
			m.slow(0, 1<<30)
			m.power(20*time.Second, 100) // power and memory back: the process criterion holds it
			if r := m.l.Run("a"); r.ended {
				m.t.Fatalf("release closed without the engine's exit: %+v", r.rel)
			}
			if _, err := m.l.EngineExited("a", m.now); err != nil {
				m.t.Fatal(err)
			}
			m.power(6*time.Second, 100)
			return m.l.Run("a")
		}, reason: contract.EndReasonReleaseClosed, state: phaseapi.ReleaseClosed, closedBy: phaseapi.CriterionProcess, relEnd: 20 * time.Second},
		{name: "expiry by max age", mod: func(c *Config) { c.RunMaxAge = 20 * time.Second }, run: func(m *machine) *run {
			m.mustStart("a", contract.Idle)
			m.power(10*time.Second, 100)
			m.mustStart("a", contract.Formal)
			m.power(11*time.Second, 400)
			return m.l.Run("a")
		}, reason: contract.EndReasonExpired, state: phaseapi.ReleaseNotStarted, relEnd: -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newMachine(t, tc.mod)
			r := tc.run(m)
			if !r.ended || r.endReason != tc.reason || r.rel.state != tc.state || r.crit.closedBy != tc.closedBy {
				t.Fatalf("ended %v, reason %q, release %q closed by %q (%s); want reason %q, release %q closed by %q",
					r.ended, r.endReason, r.rel.state, r.crit.closedBy, r.rel.reason, tc.reason, tc.state, tc.closedBy)
			}
			for _, ph := range r.phases {
				if ph.end == nil || ph.end.left > 0 {
					t.Errorf("phase %s not closed and resolved after the run ended", ph.phase)
				}
			}
			if rel := r.phase(contract.Release); tc.relEnd >= 0 && rel != nil {
				if got := time.Duration(rel.end.t - rel.start.t); got != tc.relEnd {
					t.Errorf("release phase lasted %v, want %v", got, tc.relEnd)
				}
			}
			if rel := r.phase(contract.Release); tc.state == phaseapi.ReleaseClosed && rel.end.t != r.rel.holdStart {
				t.Errorf("release ended at %d, its hold began at %d", rel.end.t, r.rel.holdStart)
			}
			if !m.l.takeChanged() || m.l.takeChanged() {
				t.Error("an ended run is reported changed once")
			}
			want := map[string]string{contract.EndReasonReleaseClosed: "release closed", contract.EndReasonReleaseTimedOut: "release not closed",
				contract.EndReasonExpired: "run expired"}[tc.reason]
			evs := m.l.takeEvents()
			if !slices.ContainsFunc(evs, func(ev event) bool { return strings.HasPrefix(ev.msg, want) }) || len(m.l.takeEvents()) != 0 {
				t.Errorf("events %v: want one %q, reported once", evs, want)
			}
		})
	}
}

func TestLifecycleMachineRefuses(t *testing.T) {
	for _, tc := range []struct {
		name string
		mod  func(*Config)
		run  func(m *machine) error
		code int
		msg  string
	}{
		{name: "phase out of order", run: func(m *machine) error {
			m.mustStart("a", contract.Idle)
			m.power(time.Second, 100)
			m.mustStart("a", contract.Formal)
			m.mustStart("a", contract.Formal) // a retried POST changes nothing
			return m.start("a", contract.Warmup)
		}, code: http.StatusConflict, msg: "cannot follow it"},
		{name: "ended run", run: func(m *machine) error {
			m.mustStart("a", contract.Idle)
			if _, err := m.l.End("a", m.now); err != nil {
				m.t.Fatal(err)
			}
			return m.start("a", contract.Formal)
		}, code: http.StatusConflict, msg: "has ended"},
		{name: "reused run id", mod: func(c *Config) { c.MaxRuns = 1 }, run: func(m *machine) error {
			for _, id := range []string{"a", "b"} {
				m.mustStart(id, contract.Idle)
				if _, err := m.l.End(id, m.now); err != nil {
					m.t.Fatal(err)
				}
			}
			if m.l.Run("a") != nil {
				m.t.Fatal("run a kept beyond MaxRuns 1")
			}
			return m.start("a", contract.Idle) // evicted, its id still used
		}, code: http.StatusConflict, msg: "was used before"},
		{name: "too many active runs", mod: func(c *Config) { c.MaxRuns = 1 }, run: func(m *machine) error {
			m.mustStart("a", contract.Idle)
			return m.start("b", contract.Idle)
		}, code: http.StatusTooManyRequests, msg: "runs are active"},
		{name: "engine exit of an unknown run", run: func(m *machine) error {
			_, err := m.l.EngineExited("a", m.now)
			return err
		}, code: http.StatusNotFound, msg: "no run a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newMachine(t, tc.mod)
			err := tc.run(m)
			if apiCode(err) != tc.code || !strings.Contains(fmt.Sprint(err), tc.msg) {
				t.Fatalf("got %v (status %d), want status %d containing %q", err, apiCode(err), tc.code, tc.msg)
			}
		})
	}
}

// TestLifecycleMachineRollback: a change taken back (it could not be
// persisted) leaves the run as before and its id unused.
func TestLifecycleMachineRollback(t *testing.T) {
	m := newMachine(t, nil)
	u := m.l.undoPoint("a")
	m.mustStart("a", contract.Idle)
	if !m.l.rollback(u) || m.l.Run("a") != nil || m.l.Used("a") {
		t.Fatal("a new run taken back is still kept or its id used")
	}
	m.mustStart("a", contract.Idle)
	m.power(time.Second, 100)
	u = m.l.undoPoint("a")
	if _, err := m.l.End("a", m.now); err != nil {
		t.Fatal(err)
	}
	if m.l.rollback(u) {
		t.Error("rollback of an end dropped a run id")
	}
	if r := m.l.Run("a"); r.ended || r.current().end != nil || len(m.l.finished) != 0 {
		t.Errorf("an end taken back: ended %v, phase end %v, finished %v", r.ended, r.current().end, m.l.finished)
	}
}
