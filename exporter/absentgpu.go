package exporter

import (
	"fmt"
	"slices"

	"github.com/joulemark/joulemark/internal/contract"
	"github.com/joulemark/joulemark/internal/phaseapi"
)

// A GPU that is not open at a restart (it failed to open, or its UUID was
// unknown at the save) cannot have its identity checked then. The runs
// measuring it come back all the same, with everything they had; the GPU
// is absent from them: their new boundaries take its counter at the save
// (nothing measured since), and a gap of its own (phaseapi.Gap.GPUs) runs
// from the save until it opens. When it opens its UUID is compared with
// the saved one: the same GPU resumes in the runs, its counter settled as
// the others' are (settleRestored, resumeAbsent); another GPU is never the
// runs': they go on without it, its gap lasting until their end.

// absence is a GPU of a restored run that was not open at the restart.
type absence struct {
	uuid   string  // the run's GPU, from the save
	energy float64 // its counter at the save, in the scale of the run's boundaries
	gap    int     // its gap in r.gaps
	// replaced: another GPU opened in its place (or the save had no UUID
	// for it): the run never measures it again.
	replaced bool
}

// storedAbsence is an absence in active_runs.json.
type storedAbsence struct {
	GPU          int     `json:"gpu"`
	UUID         string  `json:"uuid"`
	EnergyJoules float64 `json:"energy_joules"`
	Gap          int     `json:"gap"`
	Replaced     bool    `json:"replaced,omitempty"`
}

// lost says run r no longer measures its GPU i: another GPU opened in its
// place after a restart. Its samples are not the run's.
func (r *run) lost(i int) bool {
	ab := r.absent[i]
	return ab != nil && ab.replaced
}

// runUUID is the UUID of run r's GPU i: the saved one while it is absent.
func (e *Exporter) runUUID(r *run, i int) string {
	if ab := r.absent[i]; ab != nil {
		return ab.uuid
	}
	return e.gpus[i].dev.UUID
}

// restoreAbsent makes run r's GPUs absent that were absent at the save
// (stored: one still awaited only where the save lists its GPU missing)
// or are missing now (sameGPUs): these get a gap of their own from the
// save.
func (e *Exporter) restoreAbsent(r *run, stored []storedAbsence, missing []int, doc activeRunsDoc) error {
	for _, sa := range stored {
		i := sa.GPU
		if i < 0 || i >= len(e.gpus) || !r.measured(i) || r.absent[i] != nil || sa.Gap < 0 || sa.Gap >= len(r.gaps) ||
			!counterValue(sa.EnergyJoules) || !sa.Replaced && !doc.GPUs[i].Missing {
			return fmt.Errorf("absent GPU %+v does not fit the run or the GPUs", sa)
		}
		r.setAbsent(i, &absence{uuid: sa.UUID, energy: sa.EnergyJoules, gap: sa.Gap, replaced: sa.Replaced})
	}
	start := float64(doc.SavedAt) / 1e9
	for _, i := range missing {
		if !r.measured(i) || r.absent[i] != nil {
			continue
		}
		sg := doc.GPUs[i]
		r.gaps = append(r.gaps, phaseapi.Gap{Start: start, End: start, Reason: contract.GapExporterRestarted, GPUs: []int{i}, Open: true})
		r.setAbsent(i, &absence{uuid: sg.UUID, energy: sg.EnergyJoules, gap: len(r.gaps) - 1, replaced: sg.UUID == ""})
		e.log.Warn("restored an active run measuring a GPU not open after the restart: the GPU is not measured until it opens with its UUID from the save (a gap of its own)",
			"run_id", r.id, "gpu", i, "saved_uuid", sg.UUID, "err", e.gpus[i].dev.Err)
	}
	return nil
}

func (r *run) setAbsent(i int, ab *absence) {
	if r.absent == nil {
		r.absent = map[int]*absence{}
	}
	r.absent[i] = ab
}

// storedAbsent lists run r's absent GPUs for the save.
func (r *run) storedAbsent() []storedAbsence {
	var out []storedAbsence
	for i, ab := range r.absent {
		out = append(out, storedAbsence{GPU: i, UUID: ab.uuid, EnergyJoules: ab.energy, Gap: ab.gap, Replaced: ab.replaced})
	}
	slices.SortFunc(out, func(a, b storedAbsence) int { return a.GPU - b.GPU })
	return out
}

// gpuOpened checks GPU i, opened since the restart, against the GPU the
// save had there: the same one is settled at its first sample
// (settleRestored); another one is not the restored runs'. Called with
// e.mu held, or from restore.
func (e *Exporter) gpuOpened(i int) {
	g := e.gpus[i]
	rc := g.restored
	if rc == nil || !rc.awaiting {
		return
	}
	if g.dev.UUID == rc.uuid {
		rc.awaiting, rc.hide = false, !rc.clean
		g.energy = rc.energy
		e.log.Info("a GPU not open at the restart opened with its UUID from the save: the runs measuring it resume", "gpu", i, "uuid", g.dev.UUID)
		return
	}
	g.restored, g.energy = nil, 0
	for _, r := range e.lc.runs {
		ab := r.absent[i]
		if ab == nil || ab.replaced {
			continue
		}
		ab.replaced = true
		if !r.ended {
			e.log.Error("another GPU opened in place of a run's GPU not open at the restart: the run goes on without it (its gap lasts until the run's end; the other GPU's energy is not the run's)",
				"run_id", r.id, "gpu", i, "saved_uuid", rc.uuid, "uuid", g.dev.UUID)
		}
	}
}

// resumeAbsent measures run r's GPU i again from offset t, the GPU's
// first sample after it opened with its saved UUID: its gap ends there.
// The gap's energy is counted when the GPU's own counter bridged it and
// the running phase began before the gap; a phase begun in the gap counts
// from t (the gap's energy belongs partly to the phases before it, which
// ended at the save's counter). Called with e.mu held, after the GPU's
// counter settled.
func (e *Exporter) resumeAbsent(r *run, i int, ab *absence, bridged bool, t int64) {
	gp := &r.gaps[ab.gap]
	gp.End, gp.Open = e.unix(t), false
	delete(r.absent, i)
	if cur := r.current(); e.unix(cur.start.t) > gp.Start {
		// the start is the previous phase's end too: that one keeps the save's counter
		b := *cur.start
		b.e, b.ok = slices.Clone(b.e), slices.Clone(b.ok)
		b.e[i] = e.gpus[i].energy
		cur.start = &b
		if b.left > 0 {
			e.lc.pending = append(e.lc.pending, &b)
		}
		bridged = false
	}
	if bridged {
		gp.EnergyBridgedGPUs = []int{i}
	}
	e.log.Info("a run's GPU missing since the restart is measured again", "run_id", r.id, "gpu", i, "uuid", ab.uuid,
		"gap_seconds", gp.End-gp.Start, "gap_energy_counted", bridged)
}

// beganAbsent says run r's phase ph began while GPU i was absent from r.
func (e *Exporter) beganAbsent(r *run, ph *phaseRec, i int) bool {
	ab := r.absent[i]
	return ab != nil && e.unix(ph.start.t) > r.gaps[ab.gap].Start
}

// runGaps is run r's gaps for a status: an open one ends at the run's
// end, or now while the run is active. Called with e.mu held.
func (e *Exporter) runGaps(r *run) []phaseapi.Gap {
	gaps := cloneGaps(r.gaps)
	for k := range gaps {
		g := &gaps[k]
		switch {
		case !g.Open:
		case r.ended && r.current().end != nil:
			g.End, g.Open = e.unix(r.current().end.t), false
		default:
			g.End = max(g.Start, e.unix(e.off(e.clock.Now())))
		}
	}
	return gaps
}

// missingSeconds is how much of [start, end] (unix seconds) lies in the
// gaps of GPU i's own.
func missingSeconds(gaps []phaseapi.Gap, i int, start, end float64) float64 {
	var s float64
	for _, g := range gaps {
		if slices.Contains(g.GPUs, i) {
			s += max(0, min(end, g.End)-max(start, g.Start))
		}
	}
	return s
}

// awaitedClean says whether every GPU awaited since the restart was saved
// at a graceful shutdown: a save while one was not marks itself unclean,
// so a later restart does not continue that counter from a value possibly
// below one served. Called with e.mu held.
func (e *Exporter) awaitedClean() bool {
	for _, g := range e.gpus {
		if g.restored != nil && g.restored.awaiting && !g.restored.clean {
			return false
		}
	}
	return true
}
