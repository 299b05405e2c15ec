package exporter

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/joulemark/joulemark/internal/atomicfile"
	"github.com/joulemark/joulemark/internal/contract"
	"github.com/joulemark/joulemark/internal/phaseapi"
)

// Durable state under Config.StoragePath (docs/exporter.md, "Durable state"):
//
//   - run_ids.json: every run id this exporter ever accepted, rewritten
//     (atomically) before the first phase of a new id is acknowledged, so a
//     used id is refused after eviction and after a restart;
//   - active_runs.json: each GPU's (and RAPL zone's) cumulative energy, the
//     runs still active with their phase boundaries, the energy counters
//     there, the idle statistics and the release state. It is rewritten
//     (atomically) before a phase change is acknowledged, when the sampler
//     ends a run, every Config.SaveInterval, and at a graceful shutdown
//     (clean_shutdown: the counters stopped there).
//
// Both are versioned and decoded strictly: an unknown version or field, a
// null where a list belongs, a value that is not finite or is negative, or
// the two files disagreeing stop the exporter at start, naming the file and
// how to recover (stateError).
const (
	runIDsFile     = "run_ids.json"
	activeRunsFile = "active_runs.json"
	runIDsVersion  = 1
	// activeRunsVersion 2 added clean_shutdown, run_ids and each GPU's raw
	// counter; version 1 documents are read as an unclean shutdown.
	activeRunsVersion = 2
)

type runIDsDoc struct {
	Version int      `json:"version"`
	RunIDs  []string `json:"run_ids"`
}

type activeRunsDoc struct {
	Version int `json:"version"`
	// SavedAt is when the document was written (unix nanoseconds): after a
	// restart, the restored runs have a gap from here to the restart.
	SavedAt int64 `json:"saved_at_unix_ns"`
	// Clean is set by the save at a graceful shutdown: no counter went on
	// after it, so a restart continues every counter from it.
	Clean bool `json:"clean_shutdown,omitempty"`
	// RunIDs is how many ids run_ids.json held at the save: fewer there at
	// a restart means it was truncated or replaced.
	RunIDs int `json:"run_ids,omitempty"`
	// BootID is the node's boot at the save (/proc/sys/kernel/random/boot_id):
	// the GPUs' own counters bridge a downtime only within one boot.
	BootID string      `json:"boot_id,omitempty"`
	GPUs   []storedGPU `json:"gpus"`
	// Host is each RAPL zone's cumulative energy at SavedAt (with host
	// metering); the restarted exporter continues from it.
	Host []storedZone `json:"host,omitempty"`
	Runs []storedRun  `json:"runs"`
}

// storedZone is one RAPL zone's cumulative energy counter
// (joulemark_host_energy_joules_total); null when it was unreadable.
type storedZone struct {
	Zone   string   `json:"zone"`
	Joules *float64 `json:"joules"`
}

type storedGPU struct {
	GPU  int    `json:"gpu"`
	UUID string `json:"uuid"`
	// EnergyJoules is the exporter's cumulative energy counter at SavedAt.
	EnergyJoules float64 `json:"energy_joules"`
	// RawCounterJoules is the GPU's own energy counter (NVML's) read with
	// the sample EnergyJoules includes; absent without one. A restart
	// adds the counter's advance since, the downtime's energy.
	RawCounterJoules *float64 `json:"raw_counter_joules,omitempty"`
	// Missing: the GPU has not opened since a restart; UUID and the
	// counters are the ones saved before it, checked when it opens.
	Missing bool `json:"missing,omitempty"`
	// DriverVersion and PowerLimitWatts (0: not read yet) bound the
	// restart bridge (bridgeRefused).
	DriverVersion   string  `json:"driver_version,omitempty"`
	PowerLimitWatts float64 `json:"power_limit_watts,omitempty"`
}

type storedRun struct {
	RunID     string          `json:"run_id"`
	Phases    []storedPhase   `json:"phases"`
	IdlePower []storedWelford `json:"idle_power"`
	IdleProcs []int           `json:"idle_compute_processes"`
	// IdleMemory is each GPU's memory in use over the idle phase (the
	// release's memory criterion); absent before it was measured.
	IdleMemory []storedWelford `json:"idle_memory,omitempty"`
	Release    storedRelease   `json:"release"`
	Gaps       []phaseapi.Gap  `json:"gaps,omitempty"`
	// GPUs and Selector are the first phase's GPU selection, absent when
	// the run measures every GPU.
	GPUs     []int              `json:"gpus,omitempty"`
	Selector *phaseapi.Selector `json:"selector,omitempty"`
	// Absent are the run's GPUs not measured since a restart
	// (absentgpu.go).
	Absent []storedAbsence `json:"absent_gpus,omitempty"`
}

type storedPhase struct {
	Phase contract.Phase  `json:"phase"`
	Start storedBoundary  `json:"start"`
	End   *storedBoundary `json:"end,omitempty"`
}

// storedBoundary is a phase boundary and each GPU's cumulative energy
// there (the latest sample's where the boundary was not resolved yet).
type storedBoundary struct {
	TimeUnixNs   int64     `json:"time_unix_ns"`
	EnergyJoules []float64 `json:"energy_joules"`
	// HostJoules is each RAPL zone's cumulative energy there, in the
	// order of the document's host zones (null: unreadable); absent
	// without host metering.
	HostJoules []*float64 `json:"host_joules,omitempty"`
}

type storedWelford struct {
	N    int     `json:"n"`
	Mean float64 `json:"mean"`
	M2   float64 `json:"m2"`
}

type storedRelease struct {
	State  string `json:"state"`
	Reason string `json:"reason,omitempty"`
	// EngineExitedUnixNs is when the bench reported the engine's exit (the
	// release's process criterion); 0: not reported.
	EngineExitedUnixNs int64 `json:"engine_exited_unix_ns,omitempty"`
}

// storage is the exporter's durable state directory.
type storage struct {
	dir string
	// writeFile replaces a file atomically and durably (tests inject
	// failures here).
	writeFile func(path string, data []byte) error
	// lock is the directory's lock file, held until Close (store_lock.go).
	lock *os.File
	// active writes active_runs.json (the default writeFile).
	active *exchangeFile
}

// openStorage creates dir if needed and locks it (lockDir) before any
// state file is read or written.
func openStorage(dir string) (*storage, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("exporter: storage path %s: %w", dir, err)
	}
	lock, err := lockDir(dir)
	if err != nil {
		return nil, err
	}
	s := &storage{dir: dir, lock: lock, active: newExchangeFile(dir, activeRunsFile)}
	s.writeFile = s.writeState
	return s, nil
}

// writeState replaces state file path durably: active_runs.json, written
// every second while a run is active, through s.active; any other file
// through writeDurable.
func (s *storage) writeState(path string, data []byte) error {
	if path == filepath.Join(s.dir, activeRunsFile) {
		return s.active.write(data)
	}
	return writeDurable(path, data)
}

// writeDurable writes path atomically, then syncs its directory so the
// rename survives a power loss before the write is acknowledged.
func writeDurable(path string, data []byte) error {
	if err := atomicfile.WriteFile(path, data); err != nil {
		return err
	}
	d, err := os.Open(filepath.Dir(path))
	if err != nil {
		return fmt.Errorf("syncing the directory of %s: %w", path, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("syncing the directory of %s: %w", path, err)
	}
	return nil
}

// stateError is a state file the exporter refuses to start on.
type stateError struct {
	path, problem, recovery string
}

func (e *stateError) Error() string {
	return fmt.Sprintf("exporter: state file %s: %s; refusing to start on it (docs/exporter.md, \"Durable state\"): %s", e.path, e.problem, e.recovery)
}

// corrupt is a stateError for file name with the recovery that fits it.
func (s *storage) corrupt(name, format string, args ...any) error {
	p := filepath.Join(s.dir, name)
	rec := fmt.Sprintf("it lists every run ID this exporter accepted; repair it, or start afresh forgetting them (reusing an old run ID is then possible): mv %s %s.broken", s.dir, filepath.Clean(s.dir))
	if name == activeRunsFile {
		rec = fmt.Sprintf("to start without the active runs and with energy counters from 0 (run IDs stay used): mv %s %s.broken", p, p)
	}
	return &stateError{path: p, problem: fmt.Sprintf(format, args...), recovery: rec}
}

// read decodes file name into v strictly: no unknown field, no trailing
// data. false when the file does not exist.
func (s *storage) read(name string, v any) (bool, error) {
	p := filepath.Join(s.dir, name)
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("exporter: reading %s: %w", p, err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return false, s.corrupt(name, "%v", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return false, s.corrupt(name, "data after the JSON document")
	}
	return true, nil
}

func (s *storage) write(name string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("exporter: encoding %s: %w", name, err)
	}
	return s.writeFile(filepath.Join(s.dir, name), append(b, '\n'))
}

// saveActive writes the active runs and the counters (the periodic save).
// Safe to call from any goroutine not holding e.mu; a failure is logged
// and counted (the runs go on in memory, only their recovery after a
// restart is at stake).
func (e *Exporter) saveActive() { e.save(false) }

// save writes the active runs and the counters; clean marks the save at a
// graceful shutdown.
func (e *Exporter) save(clean bool) {
	if e.store == nil {
		return
	}
	e.storeMu.Lock()
	defer e.storeMu.Unlock()
	e.mu.RLock()
	doc := e.activeDoc(clean)
	e.mu.RUnlock()
	if err := e.store.write(activeRunsFile, doc); err != nil {
		e.storeErrors.Inc()
		e.log.Error("saving the active runs and energy counters; a restart will lose what changed since the last save", "err", err)
	}
}

// requestSave asks the save loop for a save soon (a run ended in the
// sampler); without a running save loop it saves now.
func (e *Exporter) requestSave() {
	if e.saveReq == nil {
		e.saveActive()
		return
	}
	select {
	case e.saveReq <- struct{}{}:
	default:
	}
}

// activeSaveInterval is how often the state is saved while a run is
// active: a crash loses at most this much of the running phase's energy
// (its counter cannot be bridged without the GPU's own counter).
const activeSaveInterval = time.Second

// saveEvery is the save loop's period: a save is due every
// activeSaveInterval while a run is active, else every SaveInterval.
func (e *Exporter) saveEvery() time.Duration { return min(activeSaveInterval, e.cfg.SaveInterval) }

// saveLoop saves on request, every activeSaveInterval while a run is
// active, else every SaveInterval, and a last time, marked clean, when ctx
// ends (a graceful shutdown): one writer, so the state costs at most one
// file write a second whatever the GPUs and the sampling rate. Its clock
// is the sampling loop (saveTick).
func (e *Exporter) saveLoop(ctx context.Context) {
	last := time.Now()
	for {
		select {
		case <-ctx.Done():
			e.save(true)
			return
		case <-e.saveTick:
			if time.Since(last) < e.cfg.SaveInterval && !e.anyActive() {
				continue
			}
		case <-e.saveReq:
		}
		e.saveActive()
		last = time.Now()
	}
}

// anyActive reports whether a run is active.
func (e *Exporter) anyActive() bool {
	e.mu.RLock()
	defer e.mu.RUnlock()
	for _, r := range e.lc.runs {
		if !r.ended {
			return true
		}
	}
	return false
}

// activeDoc snapshots the counters and the active runs. Called with e.mu
// held (read).
func (e *Exporter) activeDoc(clean bool) activeRunsDoc {
	doc := activeRunsDoc{Version: activeRunsVersion, SavedAt: e.anchor.Load() + e.off(e.clock.Now()), Clean: clean && e.awaitedClean(),
		RunIDs: len(e.lc.seenOrder), BootID: e.bootID, Runs: []storedRun{}}
	for i, g := range e.gpus {
		sg := storedGPU{GPU: i, UUID: g.dev.UUID, EnergyJoules: g.energy, DriverVersion: g.dev.DriverVersion}
		if g.hasSlow && counterValue(g.slow.PowerLimitWatts) {
			sg.PowerLimitWatts = g.slow.PowerLimitWatts
		}
		switch rc := g.restored; {
		case rc != nil && rc.awaiting: // as saved before the restart
			sg = storedGPU{GPU: i, UUID: rc.uuid, EnergyJoules: rc.energy, RawCounterJoules: rc.raw, Missing: true,
				DriverVersion: rc.driver, PowerLimitWatts: rc.limitW}
		case rc != nil && !g.hasCounter: // not sampled since the restart: the save's bridge stays
			sg.RawCounterJoules, sg.DriverVersion, sg.PowerLimitWatts = rc.raw, rc.driver, rc.limitW
		case g.hasCounter:
			raw := g.lastCounter
			sg.RawCounterJoules = &raw
		}
		doc.GPUs = append(doc.GPUs, sg)
	}
	if e.cfg.Host != nil {
		latest := e.hostLatest()
		for i, z := range e.cfg.Host.Zones() {
			doc.Host = append(doc.Host, storedZone{Zone: z.ID, Joules: storedJoules(latest, i)})
		}
	}
	for _, id := range e.lc.seenOrder {
		r := e.lc.runs[id]
		if r == nil || r.ended {
			continue
		}
		doc.Runs = append(doc.Runs, e.storedRun(r))
	}
	return doc
}

func (e *Exporter) storedRun(r *run) storedRun {
	sr := storedRun{RunID: r.id, IdleProcs: slices.Clone(r.idleProcs), Gaps: cloneGaps(r.gaps), GPUs: r.selectionIndexes(), Selector: r.selector, Absent: r.storedAbsent(),
		Release: storedRelease{State: r.rel.state, Reason: r.rel.reason}}
	if r.crit.engineExited {
		sr.Release.EngineExitedUnixNs = e.anchor.Load() + r.crit.engineExitedAt
	}
	for _, w := range r.idleAcc {
		sr.IdlePower = append(sr.IdlePower, storedWelford{N: w.n, Mean: w.mean, M2: w.m2})
	}
	for _, w := range r.idleMem {
		sr.IdleMemory = append(sr.IdleMemory, storedWelford{N: w.n, Mean: w.mean, M2: w.m2})
	}
	for _, ph := range r.phases {
		sp := storedPhase{Phase: ph.phase, Start: e.storedBoundary(ph.start)}
		if ph.end != nil {
			b := e.storedBoundary(ph.end)
			sp.End = &b
		}
		sr.Phases = append(sr.Phases, sp)
	}
	return sr
}

// storedJoules is vals[i] for JSON: nil where NaN or missing.
func storedJoules(vals []float64, i int) *float64 {
	if i >= len(vals) || math.IsNaN(vals[i]) {
		return nil
	}
	return &vals[i]
}

func (e *Exporter) storedBoundary(b *boundary) storedBoundary {
	sb := storedBoundary{TimeUnixNs: e.anchor.Load() + b.t, EnergyJoules: make([]float64, len(e.gpus))}
	if b.host != nil {
		for i := range b.host {
			sb.HostJoules = append(sb.HostJoules, storedJoules(b.host, i))
		}
	}
	for i, g := range e.gpus {
		if b.ok[i] {
			sb.EnergyJoules[i] = b.e[i]
		} else {
			sb.EnergyJoules[i] = g.energy
		}
	}
	return sb
}

// Begin withdraws the graceful shutdown's mark from the restored state
// before this exporter serves a counter: it rewrites active_runs.json
// unchanged but for clean_shutdown. Else a crash before the next save
// (or while saves fail, a full disk) would restore that save's counters
// as final, below the values this exporter served since. An error (the
// rewrite failed) means the exporter must not start. Called once, after
// New and the bind and before Start (Start calls it when not).
func (e *Exporter) Begin() error {
	e.beginOnce.Do(func() {
		if e.cleanSave == nil {
			return
		}
		doc := *e.cleanSave
		doc.Clean = false
		if err := e.store.write(activeRunsFile, doc); err != nil {
			e.storeErrors.Inc()
			e.beginErr = fmt.Errorf("exporter: withdrawing the graceful shutdown's mark from %s (a crash would restore its counters, older than the ones served from now on): %w",
				filepath.Join(e.store.dir, activeRunsFile), err)
			return
		}
		e.cleanSave = nil
	})
	return e.beginErr
}
