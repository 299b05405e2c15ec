package analyze

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/common/model"

	"github.com/joulemark/joulemark/internal/contract"
	"github.com/joulemark/joulemark/internal/phaseapi"
	"github.com/joulemark/joulemark/internal/runarchive"
	"github.com/joulemark/joulemark/report"
)

// archivedRun is what the bench archived of the exporters' final view of
// the run (phases.json): the exact phase boundaries, the exporter's phase
// energies and the release verdict. analyze takes from it what Prometheus
// lacks: a boundary not yet scraped when analyze follows bench at once, or
// markers lost in a Prometheus outage (nothing re-sends scraped metrics).
type archivedRun struct {
	phases          map[string]PhaseBounds
	phaseEnergy     map[string]float64
	uuids           map[string]bool // the run's GPUs; the archive knows no Prometheus instance
	releaseClosed   *bool
	releaseClosedBy string
	releaseClosedAt *float64
}

// combineViews combines the exporters' views in phases.json as the
// queries combine their series: earliest start, latest end, energies
// summed, the release closed only when every exporter closed it. nil when
// the archive holds no exporter's status.
func combineViews(views []runarchive.ExporterStatus) *archivedRun {
	a := &archivedRun{phases: map[string]PhaseBounds{}, phaseEnergy: map[string]float64{}, uuids: map[string]bool{}}
	n := 0
	for _, v := range views {
		if v.Status == nil {
			continue
		}
		n++
		for _, ph := range v.Status.Phases {
			name := string(ph.Phase)
			b := a.phases[name]
			if ph.Start > 0 && (!b.HasStart || ph.Start < b.Start) {
				b.Start, b.HasStart = ph.Start, true
			}
			if ph.End != nil && *ph.End > 0 && (!b.HasEnd || *ph.End > b.End) {
				b.End, b.HasEnd = *ph.End, true
			}
			a.phases[name] = b
			if ph.End != nil {
				a.phaseEnergy[name] += ph.EnergyJoules
			}
			for _, g := range ph.GPUs {
				a.uuids[g.UUID] = true
			}
		}
		a.addRelease(v.Status.Release)
	}
	if n == 0 {
		return nil
	}
	return a
}

// addRelease folds one exporter's release verdict in.
func (a *archivedRun) addRelease(rs phaseapi.ReleaseStatus) {
	closed := rs.Closed != nil && *rs.Closed
	if a.releaseClosed == nil || !closed {
		a.releaseClosed = new(closed && (a.releaseClosed == nil || *a.releaseClosed))
	}
	if rs.ClosedByAt != nil && (a.releaseClosedAt == nil || *rs.ClosedByAt > *a.releaseClosedAt) {
		a.releaseClosedBy, a.releaseClosedAt = rs.ClosedBy, new(*rs.ClosedByAt)
	}
}

// fillPhases takes the archived boundaries Prometheus lacks into d and
// notes them in d.FromArchive.
func (a *archivedRun) fillPhases(d *RunData) {
	for _, ph := range contract.Phases {
		name := string(ph)
		ab, ok := a.phases[name]
		if !ok {
			continue
		}
		b := d.Phases[name]
		var took []string
		if !b.HasStart && ab.HasStart {
			b.Start, b.HasStart = ab.Start, true
			took = append(took, "start")
		}
		if !b.HasEnd && ab.HasEnd && ab.End >= b.Start {
			b.End, b.HasEnd = ab.End, true
			took = append(took, "end")
		}
		if len(took) > 0 {
			d.Phases[name] = b
			d.FromArchive = append(d.FromArchive, name+" "+strings.Join(took, "+"))
		}
	}
}

// fillEnergy takes the archived phase energies Prometheus lacks into d,
// and the GPUs they cover into keys (by UUID, without an instance) when
// Prometheus named none.
func (a *archivedRun) fillEnergy(d *RunData, keys map[gpuKey]bool) {
	for _, ph := range contract.Phases {
		name := string(ph)
		if _, ok := d.PhaseEnergy[name]; ok {
			continue
		}
		if e, ok := a.phaseEnergy[name]; ok {
			d.PhaseEnergy[name] = e
			d.FromArchive = append(d.FromArchive, name+" exporter energy")
		}
	}
	if len(keys) == 0 {
		for u := range a.uuids {
			keys[gpuKey{uuid: u}] = true
		}
	}
}

// fillRelease takes the archived release verdict into d when Prometheus
// has none and the run has a release.
func (a *archivedRun) fillRelease(d *RunData) {
	if d.ReleaseClosed == nil && a.releaseClosed != nil && d.Phases["release"].HasStart {
		d.ReleaseClosed = new(*a.releaseClosed)
		d.ReleaseClosedBy, d.ReleaseClosedAt = a.releaseClosedBy, a.releaseClosedAt
		d.FromArchive = append(d.FromArchive, "release verdict")
	}
}

// settled reports whether Prometheus holds the run's end: every phase with
// a start has its end, and every GPU of the run has an energy sample at or
// after the last end (a GPU without a recent sample at all will get none).
// why says what is still missing.
func (l *loader) settled(ctx context.Context, d *RunData, gpuSel gpuSet, to float64) (ok bool, why string, err error) {
	for _, ph := range contract.Phases {
		name := string(ph)
		if b := d.Phases[name]; b.HasStart && !b.HasEnd {
			return false, fmt.Sprintf("the %s phase has no end yet", name), nil
		}
	}
	vec, err := l.vector(ctx, fmt.Sprintf("min by (instance, uuid) (timestamp(%s{%s}))", contract.GPUEnergy, gpuSel.sel), l.now)
	if err != nil {
		return false, "", err
	}
	for _, s := range vec {
		if last := float64(s.Value); gpuSel.has(s.Metric) && !math.IsNaN(last) && last < to {
			return false, fmt.Sprintf("the last energy sample (%s) is before the run's end (%s)",
				model.TimeFromUnixNano(int64(last*1e9)).Time().UTC().Format(time.RFC3339), unixUTC(to)), nil
		}
	}
	return true, "", nil
}

// settle waits, at most l.wait, until the run has settled (see settled),
// reading the boundaries, phase energies and release again each second.
// Without an end in sight it goes on with what there is; the report's
// measurement says how long it waited and what it took from the archive.
func (l *loader) settle(ctx context.Context, d *RunData, gpuSel gpuSet, from, to float64) (float64, float64, error) {
	start := time.Now()
	deadline := start.Add(l.wait)
	for {
		ok, why, err := l.settled(ctx, d, gpuSel, to)
		if err != nil || ok {
			if waited := time.Since(start); err == nil && waited > time.Second/2 {
				d.WaitedSeconds = new(math.Round(waited.Seconds()*10) / 10)
				l.log.Info("the run's final samples are in Prometheus", "run_id", l.runID, "waited", waited.Round(100*time.Millisecond))
			}
			return from, to, err
		}
		left := time.Until(deadline)
		if left <= 0 {
			d.WaitedSeconds = new(math.Round(time.Since(start).Seconds()*10) / 10)
			l.log.Warn("gave up waiting for the run's final samples; analyzing what there is", "run_id", l.runID, "waited", l.wait, "missing", why)
			return from, to, nil
		}
		if time.Since(start) < time.Second {
			l.log.Info("waiting for the run's final samples (bounded by --wait)", "run_id", l.runID, "missing", why, "max", l.wait)
		}
		select {
		case <-ctx.Done():
			return 0, 0, ctx.Err()
		case <-time.After(min(time.Second, left)):
		}
		l.now = time.Now()
		d.Phases, d.PhaseEnergy, d.RestartedPhases, d.FromArchive = map[string]PhaseBounds{}, map[string]float64{}, nil, nil
		d.ReleaseClosed, d.ReleaseClosedBy, d.ReleaseClosedAt = nil, "", nil
		if from, to, err = l.loadPhases(ctx, d); err != nil {
			return 0, 0, err
		}
		// the GPU selector stays the first round's
		if _, err := l.loadPhaseEnergy(ctx, d); err != nil {
			return 0, 0, err
		}
		if err := l.loadRelease(ctx, d); err != nil {
			return 0, 0, err
		}
	}
}

// fromArchiveLine is the report's sentence on what came from the archive.
func fromArchiveLine(m report.Measurement) string {
	if len(m.FromArchive) == 0 {
		return ""
	}
	s := slices.Clone(m.FromArchive)
	return "Taken from the bench archive (phases.json), Prometheus lacking them: " + strings.Join(s, ", ") + "."
}
