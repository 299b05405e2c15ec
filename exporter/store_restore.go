package exporter

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"

	"github.com/joulemark/joulemark/internal/contract"
	"github.com/joulemark/joulemark/internal/gpu"
	"github.com/joulemark/joulemark/internal/phaseapi"
)

// restoredCounter is a GPU's saved counter, settled at its first sample
// after the restart (settleRestored).
type restoredCounter struct {
	energy float64  // the exporter's counter at the save
	raw    *float64 // the GPU's own counter at the save
	clean  bool     // saved at a graceful shutdown
	// hide: the counter is not served until settled (after an unclean
	// shutdown it may go back to 0).
	hide bool
	// awaiting: the GPU was not open at the restart; uuid is the one it
	// had at the save, checked when it opens (gpuOpened).
	awaiting bool
	uuid     string
	// What bounds the bridge (bridgeRefused): the save's driver version,
	// power limit and time (unix ns), and whether the node booted since.
	driver   string
	limitW   float64
	savedAt  int64
	sameBoot bool
}

// restore loads the seen run ids, the counters and the active runs from
// storage, refusing state it cannot trust (stateError). Runs come back
// with their phases and energy so far; the time from the last save to now
// is a gap (contract.GapExporterRestarted). Counters continue from the
// save after a graceful shutdown; after an unclean one, from the GPU's own
// counter's advance when it has one, else from 0 (a reset, which
// Prometheus handles, never a value below one already served). A GPU that
// is not open has no identity to check yet: the runs measuring it are
// restored without it until it opens with its saved UUID
// (absentgpu.go). Called from New, before sampling starts.
func (e *Exporter) restore() error {
	var ids runIDsDoc
	haveIDs, err := e.store.read(runIDsFile, &ids)
	if err != nil {
		return err
	}
	if haveIDs {
		if err := e.checkRunIDs(ids); err != nil {
			return err
		}
	}
	var doc activeRunsDoc
	ok, err := e.store.read(activeRunsFile, &doc)
	if err != nil {
		return err
	}
	if !ok {
		return e.activeLost(len(ids.RunIDs))
	}
	if err := e.checkActive(doc, haveIDs); err != nil {
		return err
	}
	if doc.Clean {
		saved := doc // as read, for Begin
		e.cleanSave = &saved
	}
	m, err := e.mapGPUs(doc.GPUs)
	if err != nil {
		return err
	}
	if doc, err = e.remap(doc, m); err != nil {
		return err
	}
	missing := e.missingGPUs(doc.GPUs)
	e.restoreHost(doc.Host, doc.Clean)
	gap := phaseapi.Gap{Start: float64(doc.SavedAt) / 1e9, End: e.restartedAt(), Reason: contract.GapExporterRestarted}
	for _, sr := range doc.Runs {
		r, err := e.restoredRun(sr, doc.Host, doc.Clean)
		if err != nil {
			return e.store.corrupt(activeRunsFile, "run %s: %v", sr.RunID, err)
		}
		r.gaps = append(r.gaps, gap)
		if err := e.restoreAbsent(r, sr.Absent, missing, doc); err != nil {
			return e.store.corrupt(activeRunsFile, "run %s: %v", sr.RunID, err)
		}
		e.lc.runs[r.id] = r
		e.log.Warn("restored an active run; the exporter's downtime is a gap", "run_id", r.id,
			"gap_start", e.wall(doc.SavedAt-e.anchor.Load()), "gap_seconds", gap.End-gap.Start)
	}
	e.restoreGPUCounters(doc, missing)
	for _, i := range missing {
		if e.gpus[i].dev.Err == "" { // not open at the save, open now
			e.gpuOpened(i)
		}
	}
	return nil
}

// checkRunIDs validates run_ids.json and loads it.
func (e *Exporter) checkRunIDs(ids runIDsDoc) error {
	if ids.Version != runIDsVersion {
		return e.store.corrupt(runIDsFile, "version %d, this exporter reads version %d", ids.Version, runIDsVersion)
	}
	if ids.RunIDs == nil {
		return e.store.corrupt(runIDsFile, "run_ids missing or null (want a list)")
	}
	for _, id := range ids.RunIDs {
		if err := contract.ValidateRunID(id); err != nil {
			return e.store.corrupt(runIDsFile, "%v", err)
		}
		if _, dup := e.lc.seen[id]; dup {
			return e.store.corrupt(runIDsFile, "run ID %s listed twice (this exporter never writes it twice)", id)
		}
		e.lc.seen[id] = struct{}{}
		e.lc.seenOrder = append(e.lc.seenOrder, id)
	}
	return nil
}

// activeLost refuses a state directory whose run_ids.json lists ids
// (runs were started) but whose active_runs.json is gone, unless the
// operator moved it aside (active_runs.json.broken, the documented
// recovery): starting would silently drop the runs active at the last save
// and restart every counter from 0.
func (e *Exporter) activeLost(ids int) error {
	p := filepath.Join(e.store.dir, activeRunsFile)
	if ids == 0 {
		return nil
	}
	if _, err := os.Stat(p + ".broken"); err == nil {
		e.log.Warn("starting without the active runs and with energy counters from 0: "+activeRunsFile+" was moved aside", "moved", p+".broken")
		return nil
	}
	return &stateError{path: p, problem: fmt.Sprintf("missing while %s lists %d run IDs (deleted?): the runs active at the last save would be dropped silently", runIDsFile, ids),
		recovery: fmt.Sprintf("restore it; or, to start without those runs (their IDs stay used) and with energy counters from 0: touch %s.broken", p)}
}

// checkActive validates active_runs.json against itself and run_ids.json.
func (e *Exporter) checkActive(doc activeRunsDoc, haveIDs bool) error {
	bad := func(format string, args ...any) error { return e.store.corrupt(activeRunsFile, format, args...) }
	switch {
	case doc.Version != 1 && doc.Version != activeRunsVersion:
		return bad("version %d, this exporter reads versions 1 and %d", doc.Version, activeRunsVersion)
	case doc.GPUs == nil || doc.Runs == nil:
		return bad("gpus or runs missing or null (want lists)")
	case doc.SavedAt <= 0:
		return bad("saved_at_unix_ns %d", doc.SavedAt)
	case doc.RunIDs > len(e.lc.seenOrder) || (!haveIDs && len(doc.Runs) > 0):
		return e.store.corrupt(runIDsFile, "holds %d run IDs (file present: %v), but %d when %s was saved: truncated, replaced or deleted",
			len(e.lc.seenOrder), haveIDs, max(doc.RunIDs, len(doc.Runs)), activeRunsFile)
	}
	for _, g := range doc.GPUs {
		if !counterValue(g.EnergyJoules) || (g.RawCounterJoules != nil && !counterValue(*g.RawCounterJoules)) {
			return bad("gpu %d: energy counter %v (raw %v): want 0 to 1e15", g.GPU, g.EnergyJoules, ptrString(g.RawCounterJoules))
		}
		if !counterValue(g.PowerLimitWatts) {
			return bad("gpu %d: power limit %v W: want 0 to 1e15", g.GPU, g.PowerLimitWatts)
		}
	}
	for _, z := range doc.Host {
		if z.Joules != nil && !counterValue(*z.Joules) {
			return bad("host zone %s: energy counter %v: want 0 to 1e15", z.Zone, *z.Joules)
		}
	}
	runs := map[string]bool{}
	for _, sr := range doc.Runs {
		if err := contract.ValidateRunID(sr.RunID); err != nil {
			return bad("%v", err)
		}
		if _, seen := e.lc.seen[sr.RunID]; !seen {
			return e.store.corrupt(runIDsFile, "lacks run %s, active in %s", sr.RunID, activeRunsFile)
		}
		if runs[sr.RunID] {
			return bad("run %s listed twice", sr.RunID)
		}
		runs[sr.RunID] = true
		if err := checkStoredRun(sr); err != nil {
			return bad("run %s: %v", sr.RunID, err)
		}
	}
	return nil
}

// checkStoredRun checks a run's numbers: finite boundaries, idle
// statistics finite and non-negative.
func checkStoredRun(sr storedRun) error {
	if sr.Phases == nil || sr.IdlePower == nil || sr.IdleProcs == nil {
		return errors.New("phases, idle_power or idle_compute_processes missing or null (want lists)")
	}
	if len(sr.Gaps) > maxRunGaps {
		return fmt.Errorf("%d gaps: want at most %d", len(sr.Gaps), maxRunGaps)
	}
	for _, w := range sr.IdlePower {
		if w.N < 0 || !counterValue(w.Mean) || !counterValue(w.M2) {
			return fmt.Errorf("idle power statistics %+v: want n ≥ 0, mean and m2 from 0 to 1e15", w)
		}
	}
	for _, w := range sr.IdleMemory { // bytes: JSON numbers are finite
		if w.N < 0 || w.Mean < 0 || w.M2 < 0 {
			return fmt.Errorf("idle memory statistics %+v: want n, mean and m2 ≥ 0", w)
		}
	}
	for _, sp := range sr.Phases {
		bs := []storedBoundary{sp.Start}
		if sp.End != nil {
			bs = append(bs, *sp.End)
		}
		for _, b := range bs {
			if b.EnergyJoules == nil || b.TimeUnixNs <= 0 {
				return fmt.Errorf("phase %s: boundary without time or energies", sp.Phase)
			}
			for _, v := range b.EnergyJoules {
				if math.Abs(v) > maxStoredJoules {
					return fmt.Errorf("phase %s: boundary energy %v", sp.Phase, v)
				}
			}
			for _, v := range b.HostJoules {
				if v != nil && math.Abs(*v) > maxStoredJoules {
					return fmt.Errorf("phase %s: boundary host energy %v", sp.Phase, *v)
				}
			}
		}
	}
	return nil
}

// maxRunGaps bounds a restored run's gaps: a gap per restart (and per GPU
// missing at one) of a run that lasts at most --run.max-age; more is a
// corrupt or hostile file, which would be rewritten every second.
const maxRunGaps = 1000

// maxStoredJoules bounds a restored energy value: 1e15 J is a 1 kW device
// running for 30,000 years; anything above is a corrupt file.
const maxStoredJoules = 1e15

// counterValue: finite, ≥ 0 and at most maxStoredJoules.
func counterValue(v float64) bool { return v >= 0 && v <= maxStoredJoules }

func ptrString(v *float64) string {
	if v == nil {
		return "none"
	}
	return fmt.Sprint(*v)
}

// missingGPUs lists the GPUs (saved ones mapped onto this exporter's,
// store_match.go) whose identity cannot be compared now or differs: not
// open now (they failed to open at start: no UUID), not open at the save,
// not known there, or another GPU in the saved one's place; the runs measuring one are restored without it until it
// opens with its saved UUID (absentgpu.go).
func (e *Exporter) missingGPUs(saved []storedGPU) (missing []int) {
	for i, g := range saved {
		if g.UUID == "" || g.Missing || e.gpus[i].dev.Err != "" || g.UUID != e.gpus[i].dev.UUID {
			missing = append(missing, i)
		}
	}
	return missing
}

// restoreGPUCounters sets each GPU's counter from the save: continued
// after a graceful shutdown; after an unclean one, held back until the
// first sample when the GPU's own counter can bridge the downtime, else
// from 0 with the open phases rebased (rebaseOpen). A missing GPU's
// counter (sameGPUs) awaits its opening, hidden, when its UUID was known
// at the save (gpuOpened), else starts from 0.
func (e *Exporter) restoreGPUCounters(doc activeRunsDoc, missing []int) {
	for i, sg := range doc.GPUs {
		g := e.gpus[i]
		rc := &restoredCounter{energy: sg.EnergyJoules, raw: sg.RawCounterJoules, clean: doc.Clean, hide: !doc.Clean,
			driver: sg.DriverVersion, limitW: sg.PowerLimitWatts, savedAt: doc.SavedAt, sameBoot: doc.BootID != "" && doc.BootID == e.bootID}
		if slices.Contains(missing, i) {
			if sg.UUID != "" {
				rc.awaiting, rc.uuid, rc.hide = true, sg.UUID, true
				g.restored, g.energy = rc, sg.EnergyJoules
			}
			continue
		}
		switch {
		case doc.Clean:
			g.energy = sg.EnergyJoules
		case sg.RawCounterJoules != nil:
			g.energy = sg.EnergyJoules
		default:
			e.rebaseOpen(i, sg.EnergyJoules)
			e.log.Warn("unclean shutdown: the GPU's energy counter starts again from 0 (the last save may be older than the last value served)",
				"gpu", i, "uuid", g.dev.UUID, "saved_joules", sg.EnergyJoules)
			continue
		}
		if sg.RawCounterJoules != nil {
			g.restored = rc
		}
	}
}

// settleRestored settles GPU i's restored counter at its first valid
// sample s: the GPU's own counter's advance since the save is added (the
// downtime's energy) when it did not go back; else a graceful shutdown's
// counter goes on as saved and an unclean one's starts again from 0.
// Called with e.mu held.
// The runs the GPU was absent from measure it again (resumeAbsent).
// Called with e.mu held.
func (e *Exporter) settleRestored(i int, g *gpuState, s gpu.Sample) {
	rc := g.restored
	g.restored = nil
	bridged := rc.raw != nil && g.counter && s.HasEnergy && s.EnergyJoules >= *rc.raw
	if bridged {
		if why := e.bridgeRefused(g, rc, s); why != "" {
			bridged = false
			e.log.Warn("the GPU's own energy counter does not bridge the restart: "+why, "gpu", i, "uuid", g.dev.UUID)
		}
	}
	switch {
	case bridged:
		g.energy = rc.energy + s.EnergyJoules - *rc.raw
		e.log.Info("energy counter continued across the restart; the GPU's own counter gives the downtime's energy",
			"gpu", i, "uuid", g.dev.UUID, "downtime_joules", s.EnergyJoules-*rc.raw)
	case rc.clean:
	default:
		g.energy = 0
		e.rebaseOpen(i, rc.energy)
		e.log.Warn("unclean shutdown and the GPU's own counter went back (or there is none): its energy counter starts again from 0", "gpu", i, "uuid", g.dev.UUID)
	}
	e.markBridged(i, bridged, e.off(s.Time))
}

// bridgeFallbackWatts bounds a bridged downtime's power when the GPU's
// power limit is not known (never read before the save nor since): above
// any single GPU module's.
const bridgeFallbackWatts = 3000

// bridgeRefused says why GPU g's own counter advance since the save (at
// sample s, not below the saved one) cannot be the downtime's energy
// ("" when it can): the node
// rebooted (another boot ID, or one unknown), the driver changed (both
// reset or restart the counter, which may then be past the saved value
// by chance), or the advance is more than the GPU's power limit over the
// downtime (plus a second: the saved counter was read at the last sample
// before the save).
func (e *Exporter) bridgeRefused(g *gpuState, rc *restoredCounter, s gpu.Sample) string {
	switch {
	case !rc.sameBoot:
		return fmt.Sprintf("the node booted since the save (boot ID %q now)", e.bootID)
	case rc.driver != g.dev.DriverVersion:
		return fmt.Sprintf("the driver changed since the save (%q, now %q)", rc.driver, g.dev.DriverVersion)
	}
	limit := max(rc.limitW, g.slow.PowerLimitWatts)
	if !(limit > 0) {
		limit = bridgeFallbackWatts
	}
	down := float64(e.anchor.Load()+e.off(s.Time)-rc.savedAt)/1e9 + 1
	if adv := s.EnergyJoules - *rc.raw; adv > limit*down {
		return fmt.Sprintf("its advance %.0f J is more than the power limit %.0f W allows over the %.0f s since the save", adv, limit, down)
	}
	return ""
}

// markBridged records in the restart gap of every restored run measuring
// GPU i whether its own counter gave the downtime's energy, and measures
// GPU i again in the runs it was absent from, from offset t. Called with
// e.mu held.
func (e *Exporter) markBridged(i int, bridged bool, t int64) {
	for _, r := range e.lc.runs {
		if r.ended || !r.measured(i) {
			continue
		}
		if ab := r.absent[i]; ab != nil {
			if !ab.replaced {
				e.resumeAbsent(r, i, ab, bridged, t)
			}
			continue
		}
		k := slices.IndexFunc(r.gaps, func(g phaseapi.Gap) bool {
			return g.Reason == contract.GapExporterRestarted && g.End == e.restartedAt() && g.AllGPUs()
		})
		if !bridged || k < 0 || slices.Contains(r.gaps[k].EnergyBridgedGPUs, i) {
			continue
		}
		g := &r.gaps[k]
		g.EnergyBridgedGPUs = append(g.EnergyBridgedGPUs, i)
		slices.Sort(g.EnergyBridgedGPUs)
	}
}

// restartedAt is the end of the gap this start's restore adds, unix
// seconds.
func (e *Exporter) restartedAt() float64 { return float64(e.anchor.Load()) / 1e9 }

// rebaseOpen moves GPU i's start of every running phase by -by: its
// counter starts again from 0, and the energy before the save still
// counts; a phase begun while GPU i was absent from its run counts from
// the GPU's opening instead (resumeAbsent). Called with e.mu held.
func (e *Exporter) rebaseOpen(i int, by float64) {
	for _, r := range e.lc.runs {
		if ph := r.current(); !r.ended && ph != nil && ph.end == nil && ph.start.ok[i] && !e.beganAbsent(r, ph, i) {
			ph.start.e[i] -= by
		}
	}
}

func (e *Exporter) restoredRun(sr storedRun, host []storedZone, clean bool) (*run, error) {
	n := len(e.gpus)
	if len(sr.Phases) == 0 || len(sr.IdlePower) != n || len(sr.IdleProcs) != n {
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
		r.crit.engineExited, r.crit.engineExitedAt = true, sr.Release.EngineExitedUnixNs-e.anchor.Load()
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
	e.rebaseHost(r.phases[len(r.phases)-1], host, clean)
	return r, nil
}

// rebaseHost fits a running phase's host start to the zones' counters
// after the restart: kept where a zone continues, moved by the saved
// value where it starts again from 0 (an unclean shutdown), unknown (NaN)
// where the zone was unreadable at the save.
func (e *Exporter) rebaseHost(ph *phaseRec, host []storedZone, clean bool) {
	if ph.end != nil || ph.start.host == nil {
		return
	}
	for i, ok := range e.hostContinued {
		switch {
		case ok:
		case !clean && i < len(host) && host[i].Joules != nil:
			ph.start.host[i] -= *host[i].Joules
		default:
			ph.start.host[i] = math.NaN()
		}
	}
}

func (e *Exporter) restoredBoundary(sb storedBoundary) (*boundary, error) {
	if len(sb.EnergyJoules) != len(e.gpus) {
		return nil, fmt.Errorf("boundary with %d GPU energies, want %d", len(sb.EnergyJoules), len(e.gpus))
	}
	b := &boundary{t: sb.TimeUnixNs - e.anchor.Load(), e: slices.Clone(sb.EnergyJoules), ok: make([]bool, len(e.gpus))}
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
// values after a graceful shutdown when the zones are the same (IDs, in
// order), so a restored phase's host energy goes on like its GPU energy
// (nothing counted over the downtime), and restored boundaries keep their
// host values. After an unclean shutdown every zone starts again from 0
// (the save may be older than the last value served) and a running phase's
// start moves with it (rebaseHost). A zone unreadable at the save starts
// again from 0: the phase running across the restart has no host energy
// for it. Other zones, or no saved host state: no restored phase has host
// energy (logged when the zones changed).
func (e *Exporter) restoreHost(saved []storedZone, clean bool) {
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
	if !clean {
		e.log.Warn("unclean shutdown: the host's energy counters start again from 0 (the last save may be older than the last value served)")
		return
	}
	vals := make([]float64, len(saved))
	for i, z := range saved {
		vals[i] = math.NaN()
		if z.Joules != nil {
			vals[i], e.hostContinued[i] = *z.Joules, true
		}
	}
	e.cfg.Host.Continue(vals)
}
