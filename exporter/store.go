package exporter

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"

	"github.com/joulemark/joulemark/exporter/phaseapi"
	"github.com/joulemark/joulemark/internal/atomicfile"
	"github.com/joulemark/joulemark/internal/contract"
	"github.com/joulemark/joulemark/internal/runid"
)

// Durable state under Config.StoragePath (docs/exporter.md, "Durable state"):
//
//   - run_ids.json: every run id this exporter ever accepted, rewritten
//     (atomically) before the first phase of a new id is acknowledged, so a
//     used id is refused after eviction and after a restart;
//   - active_runs.json: the runs still active, with their phase boundaries,
//     the energy counters there, the idle statistics and the release state,
//     and each GPU's cumulative energy at the save; rewritten (atomically)
//     on every phase change and every second while a run is active.
const (
	runIDsFile     = "run_ids.json"
	activeRunsFile = "active_runs.json"
	storeVersion   = 1
)

type runIDsDoc struct {
	Version int      `json:"version"`
	RunIDs  []string `json:"run_ids"`
}

type activeRunsDoc struct {
	Version int `json:"version"`
	// SavedAt is when the document was written (unix nanoseconds): after a
	// restart, the restored runs have a gap from here to the restart.
	SavedAt int64       `json:"saved_at_unix_ns"`
	GPUs    []storedGPU `json:"gpus"`
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
	// EnergyJoules is the exporter's cumulative energy counter at SavedAt;
	// the restarted exporter continues from it.
	EnergyJoules float64 `json:"energy_joules"`
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
type storage struct{ dir string }

func openStorage(dir string) (*storage, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("exporter: storage path %s: %w", dir, err)
	}
	return &storage{dir: dir}, nil
}

func (s *storage) read(name string, v any) (bool, error) {
	p := filepath.Join(s.dir, name)
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("exporter: reading %s: %w", p, err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return false, fmt.Errorf("exporter: reading %s: %w (move it away to start without it)", p, err)
	}
	return true, nil
}

func (s *storage) write(name string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("exporter: encoding %s: %w", name, err)
	}
	return atomicfile.WriteFile(filepath.Join(s.dir, name), append(b, '\n'))
}

// recordRunID adds id to the durable set of seen run ids. Called with e.mu
// held; on error the id is not recorded.
func (e *Exporter) recordRunID(id string) error {
	e.seen[id] = struct{}{}
	e.seenOrder = append(e.seenOrder, id)
	if e.store == nil {
		return nil
	}
	if err := e.store.write(runIDsFile, runIDsDoc{Version: storeVersion, RunIDs: e.seenOrder}); err != nil {
		delete(e.seen, id)
		e.seenOrder = e.seenOrder[:len(e.seenOrder)-1]
		e.storeErrors.Inc()
		return err
	}
	return nil
}

// saveActive writes the active runs. Safe to call from any goroutine not
// holding e.mu; a failure is logged and counted (the runs go on in memory,
// only their recovery after a restart is at stake).
func (e *Exporter) saveActive() {
	if e.store == nil {
		return
	}
	e.storeMu.Lock()
	defer e.storeMu.Unlock()
	e.mu.RLock()
	doc, changed := e.activeDoc()
	e.mu.RUnlock()
	if !changed {
		return
	}
	if err := e.store.write(activeRunsFile, doc); err != nil {
		e.storeErrors.Inc()
		e.log.Error("saving the active runs; they will not survive a restart", "err", err)
		return
	}
	e.savedEmpty = len(doc.Runs) == 0
}

// activeDoc snapshots the active runs; changed is false when there is
// nothing new to write (no active run, and none when last written).
// Called with e.mu held (read).
func (e *Exporter) activeDoc() (activeRunsDoc, bool) {
	doc := activeRunsDoc{Version: storeVersion, SavedAt: e.t0Unix + e.off(e.clock.Now()), Runs: []storedRun{}}
	for i, g := range e.gpus {
		doc.GPUs = append(doc.GPUs, storedGPU{GPU: i, UUID: g.dev.UUID, EnergyJoules: g.energy})
	}
	if e.cfg.Host != nil {
		latest := e.hostLatest()
		for i, z := range e.cfg.Host.Zones() {
			doc.Host = append(doc.Host, storedZone{Zone: z.ID, Joules: storedJoules(latest, i)})
		}
	}
	for _, id := range e.seenOrder {
		r := e.runs[id]
		if r == nil || r.ended {
			continue
		}
		sr := storedRun{RunID: r.id, IdleProcs: slices.Clone(r.idleProcs), Gaps: r.gaps, GPUs: r.selectionIndexes(), Selector: r.selector,
			Release: storedRelease{State: r.rel.state, Reason: r.rel.reason}}
		if r.crit.engineExited {
			sr.Release.EngineExitedUnixNs = e.t0Unix + r.crit.engineExitedAt
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
		doc.Runs = append(doc.Runs, sr)
	}
	return doc, len(doc.Runs) > 0 || !e.savedEmpty
}

// storedJoules is vals[i] for JSON: nil where NaN or missing.
func storedJoules(vals []float64, i int) *float64 {
	if i >= len(vals) || math.IsNaN(vals[i]) {
		return nil
	}
	return &vals[i]
}

func (e *Exporter) storedBoundary(b *boundary) storedBoundary {
	sb := storedBoundary{TimeUnixNs: e.t0Unix + b.t, EnergyJoules: make([]float64, len(e.gpus))}
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

// restore loads the seen run ids and the active runs from storage. Runs
// come back with their phases and energy so far; the time from the last
// save to now is a gap (phaseapi.GapExporterRestarted) without energy.
// Called from New, before sampling starts.
func (e *Exporter) restore() error {
	var ids runIDsDoc
	if _, err := e.store.read(runIDsFile, &ids); err != nil {
		return err
	}
	for _, id := range ids.RunIDs {
		if _, dup := e.seen[id]; !dup {
			e.seen[id] = struct{}{}
			e.seenOrder = append(e.seenOrder, id)
		}
	}
	var doc activeRunsDoc
	ok, err := e.store.read(activeRunsFile, &doc)
	if err != nil || !ok {
		return err
	}
	if len(doc.GPUs) != len(e.gpus) {
		e.log.Error("the GPUs changed since the last save; active runs are not restored (their ids stay used)",
			"saved_gpus", len(doc.GPUs), "gpus", len(e.gpus))
		return nil
	}
	for i, g := range doc.GPUs {
		if g.UUID != e.gpus[i].dev.UUID {
			e.log.Error("the GPUs changed since the last save; active runs are not restored (their ids stay used)",
				"gpu", i, "saved_uuid", g.UUID, "uuid", e.gpus[i].dev.UUID)
			return nil
		}
	}
	for i, g := range doc.GPUs {
		e.gpus[i].energy = g.EnergyJoules
	}
	e.restoreHost(doc.Host)
	gap := phaseapi.Gap{Start: float64(doc.SavedAt) / 1e9, End: float64(e.t0Unix) / 1e9, Reason: phaseapi.GapExporterRestarted}
	for _, sr := range doc.Runs {
		r, err := e.restoredRun(sr)
		if err != nil {
			e.log.Error("an active run in storage cannot be restored; its id stays used", "run_id", sr.RunID, "err", err)
			continue
		}
		r.gaps = append(r.gaps, gap)
		e.runs[r.id] = r
		if _, seen := e.seen[r.id]; !seen {
			e.seen[r.id] = struct{}{}
			e.seenOrder = append(e.seenOrder, r.id)
		}
		e.log.Warn("restored an active run; the exporter's downtime is a gap without energy", "run_id", r.id,
			"gap_start", e.wall(doc.SavedAt-e.t0Unix), "gap_seconds", gap.End-gap.Start)
	}
	return nil
}

func (e *Exporter) restoredRun(sr storedRun) (*run, error) {
	n := len(e.gpus)
	if runid.Validate(sr.RunID) != nil || len(sr.Phases) == 0 || len(sr.IdlePower) != n || len(sr.IdleProcs) != n {
		return nil, errors.New("incomplete record")
	}
	r := &run{id: sr.RunID, idleAcc: make([]welford, n), idleProcs: slices.Clone(sr.IdleProcs),
		rel: release{state: sr.Release.State, reason: sr.Release.Reason}, gaps: sr.Gaps}
	for i, w := range sr.IdlePower {
		r.idleAcc[i] = welford{n: w.N, mean: w.Mean, m2: w.M2}
	}
	if len(sr.IdleMemory) == n {
		r.idleMem = make([]welford, n)
		for i, w := range sr.IdleMemory {
			r.idleMem[i] = welford{n: w.N, mean: w.Mean, m2: w.M2}
		}
	}
	if sr.Release.EngineExitedUnixNs != 0 {
		r.crit.engineExited, r.crit.engineExitedAt = true, sr.Release.EngineExitedUnixNs-e.t0Unix
	}
	if err := restoreSelection(r, sr.GPUs, n); err != nil {
		return nil, err
	}
	r.selector = sr.Selector
	for i, sp := range sr.Phases {
		if sp.Phase.Index() < 0 || (i > 0 && sp.Phase.Index() <= sr.Phases[i-1].Phase.Index()) {
			return nil, fmt.Errorf("phase %q out of order", sp.Phase)
		}
		ph := &phaseRec{phase: sp.Phase}
		var err error
		if ph.start, err = e.restoredBoundary(sp.Start); err != nil {
			return nil, err
		}
		if sp.End != nil {
			if ph.end, err = e.restoredBoundary(*sp.End); err != nil {
				return nil, err
			}
		}
		r.phases = append(r.phases, ph)
	}
	// A zone whose counter starts again from 0 (unreadable at the save)
	// cannot measure the phase running across the restart.
	if ph := r.phases[len(r.phases)-1]; ph.end == nil && ph.start.host != nil {
		for i, ok := range e.hostContinued {
			if !ok {
				ph.start.host[i] = math.NaN()
			}
		}
	}
	return r, nil
}

func (e *Exporter) restoredBoundary(sb storedBoundary) (*boundary, error) {
	if len(sb.EnergyJoules) != len(e.gpus) {
		return nil, fmt.Errorf("boundary with %d GPU energies, want %d", len(sb.EnergyJoules), len(e.gpus))
	}
	b := &boundary{t: sb.TimeUnixNs - e.t0Unix, e: slices.Clone(sb.EnergyJoules), ok: make([]bool, len(e.gpus))}
	for i := range b.ok {
		b.ok[i] = true
	}
	if e.hostContinued != nil && len(sb.HostJoules) == len(e.hostContinued) {
		b.host = make([]float64, len(sb.HostJoules))
		for i, v := range sb.HostJoules {
			b.host[i] = math.NaN()
			if v != nil {
				b.host[i] = *v
			}
		}
	}
	return b, nil
}

// restoreHost makes the RAPL zones' counters continue from their saved
// values when the zones are the same (IDs, in order), so a restored
// phase's host energy goes on like its GPU energy (nothing counted over the
// downtime), and restored boundaries keep their host values. A zone
// unreadable at the save starts again from 0: the phase running across the
// restart has no host energy for it. Other zones, or no saved host state:
// no restored phase has host energy (logged when the zones changed).
func (e *Exporter) restoreHost(saved []storedZone) {
	if e.cfg.Host == nil || len(saved) == 0 {
		return
	}
	zones := e.cfg.Host.Zones()
	if len(zones) != len(saved) {
		e.log.Warn("the host's RAPL zones changed since the last save; restored runs have no host energy", "saved_zones", len(saved), "zones", len(zones))
		return
	}
	for i, z := range zones {
		if saved[i].Zone != z.ID {
			e.log.Warn("the host's RAPL zones changed since the last save; restored runs have no host energy", "saved_zone", saved[i].Zone, "zone", z.ID)
			return
		}
	}
	e.hostContinued = make([]bool, len(saved))
	vals := make([]float64, len(saved))
	for i, z := range saved {
		vals[i] = math.NaN()
		if z.Joules != nil {
			vals[i], e.hostContinued[i] = *z.Joules, true
		}
	}
	e.cfg.Host.Continue(vals)
}
