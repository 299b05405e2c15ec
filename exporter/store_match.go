package exporter

import (
	"fmt"
	"slices"

	"github.com/joulemark/joulemark/internal/contract"
	"github.com/joulemark/joulemark/internal/phaseapi"
)

// After a reboot the driver may enumerate the GPUs in another order, or
// fewer of them (a dead GPU is often not listed: 8 → 7). The saved state
// is indexed by the GPUs of its exporter; a restart maps it onto this
// exporter's GPUs by UUID, never by index (gpuMap). A saved GPU found
// nowhere keeps its index when no other saved GPU took it: the GPU there
// has not opened (no UUID yet) and is checked when it opens, or it is
// another GPU, never the runs' (absentgpu.go); the runs keep the saved
// GPU's energy before the save. Else it has vanished: the runs measuring
// it come back without it, with a gap naming it
// (phaseapi.Gap.VanishedUUIDs) until their end.

// gpuMap maps the saved GPUs onto this exporter's.
type gpuMap struct {
	src      []int    // per GPU now: its index in the save, -1 for one not there
	inv      []int    // per saved GPU: its index now, -1 for one vanished
	vanished []string // the vanished GPUs' UUIDs, by saved index ("" elsewhere)
}

// mapGPUs matches the saved GPUs with this exporter's by UUID; a saved
// GPU without a match keeps its index when no other saved GPU took it,
// else it vanished. A UUID saved twice is a corrupt file.
func (e *Exporter) mapGPUs(saved []storedGPU) (gpuMap, error) {
	m := gpuMap{src: make([]int, len(e.gpus)), inv: make([]int, len(saved)), vanished: make([]string, len(saved))}
	for i := range m.src {
		m.src[i] = -1
	}
	now := map[string]int{}
	for i, g := range e.gpus {
		if g.dev.Err == "" && g.dev.UUID != "" {
			now[g.dev.UUID] = i
		}
	}
	seen := map[string]bool{}
	for k, sg := range saved {
		m.inv[k] = -1
		if sg.UUID == "" {
			continue
		}
		if seen[sg.UUID] {
			return m, e.store.corrupt(activeRunsFile, "GPU UUID %s listed twice", sg.UUID)
		}
		seen[sg.UUID] = true
		if i, ok := now[sg.UUID]; ok {
			m.src[i], m.inv[k] = k, i
		}
	}
	for k, sg := range saved {
		switch {
		case m.inv[k] >= 0:
		case k < len(e.gpus) && m.src[k] < 0:
			// not found elsewhere, its index free: checked at its opening,
			// or another GPU in its place (gpuOpened)
			m.src[k], m.inv[k] = k, k
		default:
			m.vanished[k] = sg.UUID
			e.log.Error("a GPU of the last save is not found after the restart: the active runs measuring it go on without it (a gap names it until their end)",
				"saved_gpu", k, "uuid", sg.UUID)
		}
	}
	return m, nil
}

// remap rewrites doc in this exporter's GPU indexes (mapGPUs): GPUs new
// since the save start from 0 and are not the restored runs'; a run loses
// its vanished GPUs (a gap names them), and a run left without any GPU is
// dropped (its ID stays used).
func (e *Exporter) remap(doc activeRunsDoc, m gpuMap) (activeRunsDoc, error) {
	out := doc
	out.GPUs = make([]storedGPU, len(m.src))
	for i, k := range m.src {
		out.GPUs[i] = storedGPU{GPU: i, UUID: e.gpus[i].dev.UUID}
		if k >= 0 {
			out.GPUs[i] = doc.GPUs[k]
			out.GPUs[i].GPU = i
		}
	}
	out.Runs = nil
	for _, sr := range doc.Runs {
		r, keep, err := m.run(sr, len(doc.GPUs), doc.SavedAt)
		if err != nil {
			return out, e.store.corrupt(activeRunsFile, "run %s: %v", sr.RunID, err)
		}
		if !keep {
			e.log.Error("an active run's GPUs are all gone since the last save: the run is not restored (its ID stays used)", "run_id", sr.RunID)
			continue
		}
		out.Runs = append(out.Runs, r)
	}
	if out.Runs == nil {
		out.Runs = []storedRun{}
	}
	return out, nil
}

// run rewrites one saved run (n saved GPUs); keep is false when none of
// its GPUs is left.
func (m gpuMap) run(sr storedRun, n int, savedAt int64) (storedRun, bool, error) {
	if len(sr.IdlePower) != n || len(sr.IdleProcs) != n || (sr.IdleMemory != nil && len(sr.IdleMemory) != n) {
		return sr, false, fmt.Errorf("idle statistics for %d, %d GPUs, want %d", len(sr.IdlePower), len(sr.IdleProcs), n)
	}
	measured := make([]bool, n)
	for k := range measured {
		measured[k] = len(sr.GPUs) == 0
	}
	for _, k := range sr.GPUs {
		if k < 0 || k >= n {
			return sr, false, fmt.Errorf("selected GPU %d of %d", k, n)
		}
		measured[k] = true
	}
	out := sr
	out.IdlePower, out.IdleProcs = remapSlice(sr.IdlePower, m.src), remapSlice(sr.IdleProcs, m.src)
	if sr.IdleMemory != nil {
		out.IdleMemory = remapSlice(sr.IdleMemory, m.src)
	}
	out.Phases = slices.Clone(sr.Phases)
	for p := range out.Phases {
		if err := m.boundaries(&out.Phases[p], n); err != nil {
			return sr, false, err
		}
	}
	out.GPUs = nil
	var lost []string
	for k, ok := range measured {
		switch {
		case !ok:
		case m.inv[k] >= 0:
			out.GPUs = append(out.GPUs, m.inv[k])
		default:
			lost = append(lost, m.vanished[k])
		}
	}
	if len(out.GPUs) == 0 {
		return sr, false, nil
	}
	slices.Sort(out.GPUs)
	if len(sr.GPUs) == 0 && len(out.GPUs) == len(m.src) {
		out.GPUs = nil // still every GPU
	}
	out.Gaps, out.Absent, lost = m.gaps(sr.Gaps, sr.Absent, lost)
	if len(lost) > 0 {
		t := float64(savedAt) / 1e9
		out.Gaps = append(out.Gaps, phaseapi.Gap{Start: t, End: t, Reason: contract.GapExporterRestarted, VanishedUUIDs: lost, Open: true})
	}
	return out, true, nil
}

// boundaries rewrites a phase's boundaries' GPU energies.
func (m gpuMap) boundaries(sp *storedPhase, n int) error {
	for _, b := range []*storedBoundary{&sp.Start, sp.End} {
		if b == nil {
			continue
		}
		if len(b.EnergyJoules) != n {
			return fmt.Errorf("phase %s: boundary with %d GPU energies, want %d", sp.Phase, len(b.EnergyJoules), n)
		}
		b.EnergyJoules = remapSlice(b.EnergyJoules, m.src)
	}
	if sp.End != nil {
		end := *sp.End
		sp.End = &end
	}
	return nil
}

// gaps rewrites a run's gaps and absent GPUs: a vanished GPU leaves the
// gaps' GPU lists for their VanishedUUIDs (a gap that listed only
// vanished GPUs keeps its place, absent GPUs refer to it), and is absent
// no more. lost drops the vanished GPUs an open gap (missing at the save)
// already names: that gap goes on until the run's end.
func (m gpuMap) gaps(gaps []phaseapi.Gap, absent []storedAbsence, lost []string) ([]phaseapi.Gap, []storedAbsence, []string) {
	out := cloneGaps(gaps)
	for i := range out {
		g := &out[i]
		var gpus, bridged []int
		for _, k := range g.GPUs {
			if k >= 0 && k < len(m.inv) && m.inv[k] < 0 && m.vanished[k] != "" {
				g.VanishedUUIDs = append(g.VanishedUUIDs, m.vanished[k])
				if g.Open { // still missing at the save: this gap goes on
					lost = slices.DeleteFunc(lost, func(u string) bool { return u == m.vanished[k] })
				}
			} else if k >= 0 && k < len(m.inv) && m.inv[k] >= 0 {
				gpus = append(gpus, m.inv[k])
			}
		}
		for _, k := range g.EnergyBridgedGPUs {
			if k >= 0 && k < len(m.inv) && m.inv[k] >= 0 {
				bridged = append(bridged, m.inv[k])
			}
		}
		g.GPUs, g.EnergyBridgedGPUs = gpus, bridged
	}
	var abs []storedAbsence
	for _, a := range absent {
		if a.GPU >= 0 && a.GPU < len(m.inv) && m.inv[a.GPU] >= 0 {
			a.GPU = m.inv[a.GPU]
			abs = append(abs, a)
		}
	}
	return out, abs, lost
}

// remapSlice is v in this exporter's GPU order: the zero value for a GPU
// not in the save.
func remapSlice[T any](v []T, src []int) []T {
	out := make([]T, len(src))
	for i, k := range src {
		if k >= 0 {
			out[i] = v[k]
		}
	}
	return out
}
