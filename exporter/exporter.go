// Package exporter samples GPU power at a high rate, keeps each GPU's energy
// counter, integrates the energy of lifecycle phases posted through its HTTP
// API, detects the end of the release phase, and serves it all on /metrics.
// Scrapes read cached state only, under one read lock (one consistent
// snapshot); they never call the GPU backend.
package exporter

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/joulemark/joulemark/internal/contract"
	"github.com/joulemark/joulemark/internal/gpu"
	"github.com/joulemark/joulemark/internal/powercap"
	"github.com/joulemark/joulemark/internal/remotewrite"
)

// RawWriteRetry is how long the exporter retries one batch of raw samples
// through a remote-write outage (a Prometheus restart, an upgrade). The raw
// series are what analyze prefers and what `runs push` cannot restore, and
// the exporter has no deadline, so it rides out outages as long as its
// buffer (remotewrite.Config.BufferSize, 100000 samples) holds what it
// samples meanwhile: about 10 min for 8 GPUs at 100 ms. Later samples are
// then dropped and counted (joulemark_remote_write_samples_dropped_total).
const RawWriteRetry = 10 * time.Minute

// Config configures an Exporter. Start from Defaults(), the one source of
// the defaults (the exporter's flags show them): New replaces no zero of a
// setting, it honours the zeros documented below and refuses the others.
// Its kong tags make it joulemark exporter's flags (kong:"-": no flag;
// those of the configuration file are listed in FileSettings).
type Config struct {
	Backend gpu.Backend `kong:"-"`
	// Interval is the fast sampling period (at least 10ms).
	Interval time.Duration `name:"sample.interval" group:"GPUs and sampling" help:"Power sampling period (10ms or more)."`
	// SlowInterval is the period of the slow metrics (0: 1s, or Interval
	// when that is longer).
	SlowInterval time.Duration `kong:"-"`
	// Retention is how long raw samples are kept in memory.
	Retention time.Duration `name:"sample.retention" group:"GPUs and sampling" help:"How long raw samples are kept in memory."`
	// ReleaseTolerance is the relative band around the idle baseline every
	// GPU must be back in for the release to close (0 < t < 1).
	ReleaseTolerance float64 `name:"release.tolerance" group:"Release detection" help:"The release phase closes when every GPU is back within this fraction of its idle baseline for --release.hold."`
	// ReleaseHold is how long every GPU must stay in the band (> 0).
	ReleaseHold time.Duration `name:"release.hold" group:"Release detection" help:"How long every GPU must stay within --release.tolerance of its baseline; the release ends where this hold began."`
	// ReleaseMaxWait ends a release that did not close (at least
	// ReleaseHold).
	ReleaseMaxWait time.Duration `name:"release.max-wait" group:"Release detection" help:"A release not closed after this long ends with joulemark_run_release_closed 0."`
	// ReleaseRequireEngineExit meets the release's process criterion only
	// when the bench reports the engine's exit (POST .../engine-exited),
	// never from NVML's compute process list.
	ReleaseRequireEngineExit bool `name:"release.require-engine-exit" group:"Release detection" help:"The release's process criterion is met only when the bench reports the engine's exit (bench with --engine.cmd or --engine.stop), never from NVML's compute process list; a run without the report times out at --release.max-wait."`
	// ProcessesBlind, when set, says why NVML's process lists cannot be
	// trusted (the exporter is outside the host's PID namespace, so other
	// containers' processes are never listed): the release's process
	// criterion is then met only unverified, never from the lists.
	ProcessesBlind string `kong:"-"`
	// ReleaseWindow is the span power is averaged over for the release
	// check (0: 1s; at least Interval).
	ReleaseWindow time.Duration `kong:"-"`
	// IdleCVThreshold: an idle phase whose power CV reaches it on any GPU is
	// flagged unstable (> 0).
	IdleCVThreshold float64 `kong:"-"`
	// APIToken is the bearer token the mutating API requires; empty disables
	// the mutating API (every POST answers 401).
	APIToken string `kong:"-"`
	// Clock is injectable for tests (default the system clock).
	Clock gpu.Clock `kong:"-"`
	// RemoteWrite, when set, pushes every raw power sample; a batch is
	// retried for RawWriteRetry unless its MaxElapsed says otherwise.
	RemoteWrite *remotewrite.Config `kong:"-"`
	// RemoteWriteLabels are added to every remote-written sample (e.g.
	// instance).
	RemoteWriteLabels map[string]string `kong:"-"`
	Logger            *slog.Logger      `kong:"-"`
	// Host, when set, meters the host's RAPL zones at Interval beside the
	// GPUs (joulemark_host_energy_joules_total, host phase energy).
	Host *powercap.Meter `kong:"-"`
	// Pods, when set, attributes each GPU's energy to the pods holding it
	// (kubelet.go).
	Pods *PodConfig `kong:"-"`
	// MaxRuns bounds the runs kept (finished ones are dropped oldest first;
	// at least 1).
	MaxRuns int `name:"run.max-kept" group:"Runs and durable state" help:"Runs kept in memory and served by the API: finished ones beyond it are evicted oldest first (on /metrics until run.metrics_ttl of --config.file has passed), active ones beyond it refused."`
	// RunMetricsTTL is how long a finished run's series stay on /metrics
	// once its final values are known: long enough for Prometheus to
	// scrape them. 0: until MaxRuns evicts the run, as the API serves it.
	RunMetricsTTL time.Duration `kong:"-"`
	// StoragePath is the directory of the durable state: every run id seen
	// and the active runs (store.go). Empty: nothing is kept across
	// restarts.
	StoragePath string `name:"storage.path" group:"Runs and durable state" help:"Directory of the durable state: every run ID used (refused again after eviction or restart) and the active runs (restored on start); empty: nothing is kept across restarts."`
	// RunMaxAge ends a run still active this long after its first phase,
	// with end reason "expired" (> 0).
	RunMaxAge time.Duration `name:"run.max-age" group:"Runs and durable state" help:"A run still active this long after its first phase ends with reason expired."`
	// MaxRequests is the most /metrics requests served at once; more are
	// answered 503 (node_exporter's --web.max-requests; 0: no limit).
	MaxRequests int `name:"web.max-requests" group:"Web and phase API" help:"Maximum number of parallel /metrics requests; more are answered 503. Use 0 to disable."`
	// BootID identifies the node's boot, saved with the state: a restart
	// bridges the downtime with the GPUs' own counters only within one
	// boot. Empty: /proc/sys/kernel/random/boot_id (tests inject it).
	BootID string `kong:"-"`
	// SaveInterval is how often the energy counters are saved while no run
	// is active (every second while one is), besides every change and the
	// shutdown (> 0).
	SaveInterval time.Duration `name:"storage.save-interval" group:"Runs and durable state" help:"How often the energy counters are saved while no run is active (every second while one is), besides every phase change and the shutdown; one file write per save, whatever the GPUs and the sampling rate."`
}

// Exporter is the sampler, the HTTP API and the lock around the run
// lifecycle (lc, a state machine of its own: lifecycle.go).
type Exporter struct {
	cfg     Config
	backend gpu.Backend
	clock   gpu.Clock
	log     *slog.Logger
	rw      *remotewrite.Writer
	attr    *attributor // nil without Config.Pods

	t0     time.Time    // offsets are nanoseconds since t0 (monotonic)
	anchor atomic.Int64 // offset 0 in unix nanoseconds, re-anchored on a clock step (clock.go)

	reg            *prometheus.Registry // contract metrics
	selfReg        *prometheus.Registry // exporter self-metrics
	apiRequests    *prometheus.CounterVec
	authFailures   prometheus.Counter
	storeErrors    prometheus.Counter
	clockSteps     prometheus.Counter
	authLog        authLog
	scrapeDuration *prometheus.HistogramVec
	phaseColl      *phaseCollector
	runColl        *runCollector

	mu       sync.RWMutex
	gpus     []*gpuState
	overruns uint64
	lc       *lifecycle // the runs (lifecycle.go), called with mu held

	store   *storage
	storeMu sync.Mutex    // serializes state writes and API changes; taken before mu
	saveReq chan struct{} // asks the save loop for a save (nil before Start)
	// saveTick is the save loop's clock: the sampling loop sends on it
	// every saveEvery, so that no timer of its own wakes the process
	// between two sampling ticks (nil before Start).
	saveTick chan struct{}
	// saveDone is closed when the save loop has ended (nil before Start).
	saveDone chan struct{}
	// bootID is the node's boot (Config.BootID, else read from /proc):
	// saved, and a restart bridge needs the same (store_restore.go).
	bootID string
	// cleanSave is the restored graceful shutdown's save, until Begin
	// marks it unclean (store.go).
	cleanSave *activeRunsDoc
	beginOnce sync.Once
	beginErr  error
	// hostContinued says, per RAPL zone, that its counter continues from
	// the saved state (restoreHost): restored boundaries keep its value.
	hostContinued []bool

	frozenVersion      uint64       // bumped when a run is frozen or expires (lc.evicted counts evictions)
	freezeMu           sync.RWMutex // taken before mu: held (write) while runs freeze, (read) by each gather
	frozenMu           sync.Mutex
	frozenCache        map[string][]*dto.Metric
	frozenCacheVersion uint64

	sampleDuration *prometheus.HistogramVec // backend call cost per GPU

	startOnce sync.Once
	stop      context.CancelFunc
	wg        sync.WaitGroup
	closeOnce sync.Once
	smp       *sampler // the sampling loop (sampler.go)
	ready     chan struct{}
	readyOnce sync.Once
	started   int64 // offset when Start ran (stall reference before a GPU's first read)
	sampling  bool  // Start ran (under mu)
}

// Reasons of joulemark_sampler_errors_total.
const (
	errRead    = "read"    // a fast read failed
	errSlow    = "slow"    // a slow (1 Hz) read failed
	errCounter = "counter" // the energy counter could not be read; the interval was integrated from power
	errInvalid = "invalid" // a power value that is NaN, infinite or negative
	// errFallback: the power field failed and a fallback call answered;
	// joulemark_gpu_info's power_source names that reading's source.
	errFallback = "power_fallback"
)

var errorReasons = []string{errRead, errSlow, errCounter, errInvalid, errFallback}

// stallIntervals: a GPU whose backend call has not returned for this many
// intervals is stalled (joulemark_gpu_up 0, /healthz fails).
const stallIntervals = 5

type gpuState struct {
	dev     gpu.Device
	idx     string // gpu label value
	counter bool   // energy from the GPU's counter
	ring    *ring

	// took observes the backend call's duration (joulemark_gpu_sample_duration_seconds)
	// for tookUUID, the GPU's identity when it was looked up.
	took     prometheus.Observer
	tookUUID string

	has         bool
	lastT       int64
	lastP       float64
	lastSource  string  // the power source joulemark_gpu_info shows when not the device's (stableSource)
	nextSource  string  // another source the latest reads came from, in a row
	sourceReads int     // how many
	energy      float64 // cumulative joules since exporter start
	lastCounter float64
	hasCounter  bool // lastCounter is the counter at lastT
	resets      uint64
	rejected    uint64           // counter deltas rejected as implausible (counterBound)
	restored    *restoredCounter // the saved counter, until the first sample after a restart (store_restore.go)
	// out: the GPU's reads fail or hang; not measured until it answers
	// again (gpufail.go). outReason is its gaps' reason.
	out       bool
	outReason string

	slow    gpu.SlowSample
	hasSlow bool

	// rwPower and rwEnergy are the label sets of the GPU's remote-written
	// series (nil without remote write), built when its identity is
	// known; never modified after (queued samples share them).
	rwPower, rwEnergy map[string]string

	samples  uint64
	errors   map[string]uint64 // by reason
	healthy  bool
	lastErr  string
	attempts int   // fast reads completed, failed or not
	lastDone int64 // offset when the latest fast read returned
}

// New validates cfg and builds an Exporter; Start begins sampling.
func New(cfg Config) (*Exporter, error) {
	if cfg.Backend == nil {
		return nil, errors.New("exporter: no GPU backend")
	}
	cfg.setDerived()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	devs := cfg.Backend.Devices()
	if len(devs) == 0 {
		return nil, errors.New("exporter: the GPU backend found no GPU")
	}
	e := &Exporter{
		cfg: cfg, backend: cfg.Backend, clock: cfg.Clock, log: cfg.Logger,
		ready: make(chan struct{}),
	}
	e.t0 = e.clock.Now()
	e.anchor.Store(e.t0.UnixNano())
	if err := e.addGPUs(devs); err != nil {
		return nil, err
	}
	e.smp = newSampler(e)
	e.lc = newLifecycle(cfg, e.gpus, &e.anchor)
	e.lc.hostNow = e.hostNow
	e.lc.stalled = func(g *gpuState, now int64) bool { return e.sampling && e.stalled(g, now) }
	if cfg.StoragePath != "" {
		e.bootID = cfg.bootID()
		st, err := openStorage(cfg.StoragePath)
		if err != nil {
			return nil, err
		}
		e.store = st
		if err := e.restore(); err != nil {
			st.unlock()
			return nil, err
		}
		e.closeFailGapsAtRestart()
	}
	if err := e.openRemoteWrite(); err != nil {
		e.store.unlock()
		return nil, err
	}
	if cfg.Pods != nil {
		a, err := newAttributor(*cfg.Pods, cfg.Backend, cfg.Logger)
		if err != nil {
			e.store.unlock()
			return nil, err
		}
		a.refreshed = e.noteAllCoTenants
		e.attr = a
	}
	e.registerMetrics()
	return e, nil
}

// Defaults is the exporter's default configuration, without a backend:
// the exporter command's flags take their defaults from it.
func Defaults() Config {
	return Config{
		Interval: 100 * time.Millisecond, Retention: 15 * time.Minute,
		ReleaseTolerance: 0.05, ReleaseHold: 30 * time.Second, ReleaseMaxWait: 10 * time.Minute,
		IdleCVThreshold: 0.05, MaxRuns: 100, RunMetricsTTL: 5 * time.Minute, RunMaxAge: 24 * time.Hour,
		MaxRequests: 40, SaveInterval: 10 * time.Second,
	}
}

// setDerived sets the settings derived from others (SlowInterval,
// ReleaseWindow) and the clock and logger when unset.
func (cfg *Config) setDerived() {
	if cfg.SlowInterval == 0 {
		cfg.SlowInterval = max(time.Second, cfg.Interval)
	}
	if cfg.ReleaseWindow == 0 {
		cfg.ReleaseWindow = time.Second
	}
	cfg.ReleaseWindow = max(cfg.ReleaseWindow, cfg.Interval)
	if cfg.Clock == nil {
		cfg.Clock = gpu.RealClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
}

// addGPUs sets up the per-GPU state of the backend's devices.
func (e *Exporter) addGPUs(devs []gpu.Device) error {
	capacity := int(e.cfg.Retention/e.cfg.Interval) + 2
	for i, d := range devs {
		if d.Index != i {
			return fmt.Errorf("exporter: backend lists GPU index %d at position %d", d.Index, i)
		}
		g := &gpuState{dev: d, idx: strconv.Itoa(i), counter: d.EnergySource == gpu.EnergyCounter,
			ring: newRing(capacity), healthy: d.Err == "", lastErr: d.Err, errors: map[string]uint64{}}
		e.setRWLabels(g)
		e.gpus = append(e.gpus, g)
	}
	return nil
}

// setRWLabels builds GPU g's remote-write label sets (none without remote
// write): new maps, as queued samples may hold the old ones.
func (e *Exporter) setRWLabels(g *gpuState) {
	if e.cfg.RemoteWrite == nil {
		return
	}
	set := func(name string) map[string]string {
		l := map[string]string{"__name__": name, "gpu": g.idx, "uuid": g.dev.UUID}
		maps.Copy(l, e.cfg.RemoteWriteLabels)
		return l
	}
	g.rwPower, g.rwEnergy = set(contract.GPUPowerSample), set(contract.GPUEnergySample)
}

// openRemoteWrite starts the remote writer of the raw samples when
// configured.
func (e *Exporter) openRemoteWrite() error {
	if e.cfg.RemoteWrite == nil {
		return nil
	}
	rwc := *e.cfg.RemoteWrite
	if rwc.MaxElapsed <= 0 {
		rwc.MaxElapsed = RawWriteRetry
	}
	w, err := remotewrite.New(rwc, e.cfg.Logger)
	if err != nil {
		return fmt.Errorf("exporter: %w", err)
	}
	e.rw = w
	return nil
}

// Close stops sampling, flushes remote write (5 s at most) and closes the
// backend. A backend call that hangs (a driver hang) does not hold it for
// long: after a second the backend is closed under the hung call, and a
// backend whose shutdown is blocked behind it (NVML's) is abandoned
// shutdownTimeout after Close began, with an error naming the hung GPUs;
// the process can then exit (the driver releases its state on exit).
func (e *Exporter) Close() error {
	var err error
	e.closeOnce.Do(func() {
		began := time.Now()
		if e.stop != nil {
			e.stop()
		}
		defer e.releaseStorage(began)
		if waitTimeout(&e.wg, time.Second) {
			e.closeRemoteWrite(&err)
			if berr := e.closeBackend(shutdownTimeout - time.Since(began)); berr != nil {
				err = errors.Join(err, berr)
			}
			return
		}
		hung := e.hungGPUs()
		e.log.Error("GPU read(s) still hung at shutdown; closing the GPU backend under them", "gpus", hung)
		e.closeRemoteWrite(&err)
		if berr := e.closeBackend(shutdownTimeout - time.Since(began)); berr != nil {
			e.log.Error("exiting without the GPU backend's shutdown: it is blocked behind a hung driver call",
				"gpus", hung, "waited", time.Since(began).Round(time.Millisecond), "err", berr)
			err = errors.Join(err, fmt.Errorf("%s hung at shutdown: %w", hungWhat(hung), berr))
			return
		}
		if !waitTimeout(&e.wg, max(shutdownTimeout-time.Since(began), 0)) {
			err = errors.Join(err, fmt.Errorf("%s: a read was still hung after the backend closed", hungWhat(e.hungGPUs())))
		}
	})
	return err
}

// closeBackend closes the backend, giving up after wait (at least a
// second) when its shutdown blocks.
func (e *Exporter) closeBackend(wait time.Duration) error {
	wait = max(wait, time.Second)
	closed := make(chan error, 1)
	go func() { closed <- e.backend.Close() }()
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case berr := <-closed:
		if berr != nil {
			return fmt.Errorf("closing GPU backend: %w", berr)
		}
		return nil
	case <-t.C:
		return fmt.Errorf("closing GPU backend: still blocked after %v", wait.Round(time.Millisecond))
	}
}

// hungWhat names the hung GPUs, or, with none, the backend call of another
// loop (pod attribution, host energy).
func hungWhat(gpus []int) string {
	if len(gpus) == 0 {
		return "a GPU backend call outside the sampling loops"
	}
	return fmt.Sprintf("GPU(s) %v", gpus)
}

// closeRemoteWrite flushes remote write (5 s at most).
func (e *Exporter) closeRemoteWrite(err *error) {
	if e.rw == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, rerr := e.rw.Close(ctx); rerr != nil {
		*err = errors.Join(*err, rerr)
	}
}

// shutdownTimeout bounds Close when a backend call hangs.
const shutdownTimeout = 5 * time.Second

// waitTimeout waits for wg at most d; false when it timed out.
func waitTimeout(wg *sync.WaitGroup, d time.Duration) bool {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-t.C:
		return false
	}
}

// Devices lists the GPUs the exporter measures.
func (e *Exporter) Devices() []gpu.Device {
	e.mu.RLock()
	defer e.mu.RUnlock()
	out := make([]gpu.Device, len(e.gpus))
	for i, g := range e.gpus {
		out[i] = g.dev
	}
	return out
}

// logEvents logs the lifecycle's events since the last call. Called with
// e.mu held.
func (e *Exporter) logEvents() {
	for _, ev := range e.lc.takeEvents() {
		e.log.Log(context.Background(), ev.level, ev.msg, ev.args...)
	}
}

func (e *Exporter) off(t time.Time) int64 { return int64(t.Sub(e.t0)) }

// unix converts an offset to unix seconds.
func (e *Exporter) unix(off int64) float64 { return float64(e.anchor.Load()+off) / 1e9 }

// wall is an offset as a UTC time, for logs.
func (e *Exporter) wall(off int64) time.Time { return time.Unix(0, e.anchor.Load()+off).UTC() }

// Time converts unix seconds from the API back to a time.Time.
func Time(unixSeconds float64) time.Time {
	s, f := math.Modf(unixSeconds)
	return time.Unix(int64(s), int64(math.Round(f*1e9)))
}

// applySample folds one fast read of GPU i into the state. Called with e.mu
// held.
func (e *Exporter) applySample(i int, g *gpuState, s gpu.Sample, err error) {
	if err != nil {
		g.errors[errRead]++
		if g.healthy {
			e.log.Warn("GPU sample failed; marking it unhealthy", "gpu", i, "uuid", g.dev.UUID, "err", err)
		}
		g.healthy = false
		g.lastErr = err.Error()
		// The counter read at lastT stays: the next good read's counter
		// delta covers the failed reads' interval (the trapezoid across it
		// would draw a line over whatever the GPU did meanwhile); without
		// one the interval is not counted (gpufail.go).
		e.gpuOut(i, contract.GapGPUFailed, g.lastErr)
		return
	}
	if g.dev.Err != "" {
		// A GPU that failed to open at start has opened: take its identity
		// and how it is measured.
		if devs := e.backend.Devices(); i < len(devs) && devs[i].Err == "" {
			g.dev = devs[i]
			g.counter = g.dev.EnergySource == gpu.EnergyCounter
			e.setRWLabels(g)
			g.hasCounter = false
			e.log.Info("GPU opened", "gpu", i, "uuid", g.dev.UUID)
			e.gpuOpened(i)
		}
	}
	if !g.healthy {
		e.log.Info("GPU answers again; marking it healthy", "gpu", i, "uuid", g.dev.UUID)
		g.healthy = true
		g.lastErr = ""
	}
	if !g.out {
		e.addSample(i, g, s, false)
		return
	}
	if bridged, ok := e.addSample(i, g, s, true); ok {
		e.resumeFailed(i, bridged, e.off(s.Time))
	}
}

// stalled reports whether GPU g's fast read has not returned for
// stallIntervals intervals at offset now. Called with e.mu held.
func (e *Exporter) stalled(g *gpuState, now int64) bool {
	ref := g.lastDone
	if g.attempts == 0 {
		ref = e.started
	}
	return time.Duration(now-ref) > stallIntervals*e.cfg.Interval
}

// Stalled lists the GPUs whose backend call has hung for stallIntervals
// intervals or more (empty before Start).
func (e *Exporter) Stalled() []int {
	e.mu.RLock()
	defer e.mu.RUnlock()
	if !e.sampling {
		return nil
	}
	now := e.off(e.clock.Now())
	var out []int
	for i, g := range e.gpus {
		if e.stalled(g, now) {
			out = append(out, i)
		}
	}
	return out
}

// addSample folds one fast sample into GPU g's energy and ring. After a
// gap (resuming) the interval across it counts only from the GPU's own
// counter: bridged says it did; added says the sample was taken. Called
// with e.mu held.
func (e *Exporter) addSample(i int, g *gpuState, s gpu.Sample, resuming bool) (bridged, added bool) {
	t := e.off(s.Time)
	p := s.PowerWatts
	if math.IsNaN(p) || math.IsInf(p, 0) || p < 0 {
		g.errors[errInvalid]++
		g.hasCounter = false
		return false, false
	}
	if g.has && t <= g.lastT {
		return false, false // not newer than the last sample: nothing to add
	}
	if g.restored != nil && !g.restored.awaiting {
		e.settleRestored(i, g, s)
	}
	if g.counter && !s.HasEnergy {
		g.errors[errCounter]++
	}
	if s.PowerSource != "" {
		g.errors[errFallback]++
	}
	g.stableSource(s.PowerSource)
	if g.has {
		de, fromCounter := e.intervalEnergy(i, g, &s, t, p)
		if resuming && !fromCounter {
			de = 0 // nothing measured across the gap
		}
		bridged = resuming && fromCounter
		g.energy += de
		if e.attr != nil {
			e.attr.add(i, de)
		}
	}
	g.lastCounter, g.hasCounter = s.EnergyJoules, s.HasEnergy
	g.has, g.lastT, g.lastP = true, t, p
	g.samples++
	g.ring.push(point{t: t, p: p, e: g.energy})
	if e.rw != nil {
		ts := (e.anchor.Load() + t) / 1e6
		e.rw.Append(remotewrite.Sample{Labels: g.rwPower, Value: p, TimestampMs: ts})
		e.rw.Append(remotewrite.Sample{Labels: g.rwEnergy, Value: g.energy, TimestampMs: ts})
	}
	e.lc.Sample(i, p)
	return bridged, true
}

// sourceSwitchReads is how many reads in a row must come from another
// power source before joulemark_gpu_info's power_source shows it: a
// single fallback read (counted as power_fallback) never relabels the
// series.
const sourceSwitchReads = 10

// stableSource notes that GPU g's latest reading came from src ("": the
// device's source) and switches the source shown after sourceSwitchReads
// such reads in a row.
func (g *gpuState) stableSource(src string) {
	switch {
	case src == g.lastSource:
		g.sourceReads = 0
	case src == g.nextSource && g.sourceReads > 0:
		g.sourceReads++
	default:
		g.nextSource, g.sourceReads = src, 1
	}
	if g.sourceReads >= sourceSwitchReads {
		g.lastSource, g.sourceReads = src, 0
	}
}

// intervalEnergy is GPU g's energy from its last sample to s (at offset t,
// power p): the counter's delta when both ends carry a counter reading
// (after a failed read the counter held is older than lastT, and its delta
// would count the integrated interval again), did not go back and is
// plausible (counterBound), else the trapezoid; an implausible read's
// counter is dropped from s. fromCounter says which. Called with e.mu
// held.
func (e *Exporter) intervalEnergy(i int, g *gpuState, s *gpu.Sample, t int64, p float64) (de float64, fromCounter bool) {
	dt := float64(t-g.lastT) / 1e9
	de = (g.lastP + p) / 2 * dt
	if !g.counter || !s.HasEnergy || !g.hasCounter {
		return de, false
	}
	d := s.EnergyJoules - g.lastCounter
	if d < 0 {
		g.resets++
		e.log.Warn("GPU energy counter went back (reset); using the trapezoid for this interval", "gpu", i, "uuid", g.dev.UUID)
		return de, false
	}
	if bound := counterBound(g, dt); d > bound {
		g.rejected++
		// the next interval is integrated too: this read's counter is not
		// the counter at lastT
		s.HasEnergy = false
		e.log.Warn("GPU energy counter delta above what its power limit allows; using the trapezoid for this interval",
			"gpu", i, "uuid", g.dev.UUID, "delta_joules", d, "bound_joules", bound, "seconds", dt)
		return de, false
	}
	return d, true
}

// defaultPowerLimit stands for a GPU's power limit before its first slow
// read (or when it reports none): more than any single GPU draws.
const defaultPowerLimit = 2000.0

// counterBound is the most energy GPU g's counter may plausibly add over
// dt seconds: twice its power limit over dt plus 200 ms. The margin covers
// a counter that updates every ~100 ms (two updates can fall in one
// sampling interval) and power above the limit for milliseconds; a bogus
// read (1e12 mJ) is orders of magnitude above.
func counterBound(g *gpuState, dt float64) float64 {
	limit := defaultPowerLimit
	if g.hasSlow && g.slow.PowerLimitWatts > 0 {
		limit = g.slow.PowerLimitWatts
	}
	return 2 * limit * (dt + 0.2)
}
