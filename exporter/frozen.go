package exporter

import (
	"slices"
	"strings"

	"github.com/joulemark/joulemark/internal/contract"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// A finished run whose boundaries are all resolved never changes again. Its
// series are rendered once ("frozen") and served from that cache: the
// collectors only emit the runs still moving. A frozen run stays on
// /metrics for Config.RunMetricsTTL, long enough for Prometheus to scrape
// its final values (0: until eviction), then leaves it; the API serves it
// until eviction.

// familyHelp is the HELP text of the lifecycle families, shared by the
// collectors' descriptors and the frozen families.
var familyHelp = map[string]string{
	contract.PhaseActive:        "1 while the lifecycle phase runs, 0 after.",
	contract.PhaseStart:         "Exact start of the phase (unix seconds).",
	contract.PhaseEnd:           "Exact end of the phase (unix seconds); absent while it runs.",
	contract.PhaseEnergy:        "GPU energy over the exact phase, integrated at the exporter from the high-rate samples (up to the latest sample while the phase runs).",
	contract.PhaseHostEnergy:    "Host energy (one RAPL powercap zone) over the exact phase, read at its boundaries (up to the latest sample while the phase runs); absent where the zone is unreadable.",
	contract.RunBaselinePower:   "Mean power of the run's idle phase.",
	contract.RunReleaseClosed:   "1 when every GPU came back within the tolerance of its idle baseline and held; 0 when the wait timed out (or the run was ended first).",
	contract.RunReleaseClosedBy: "When the release closed (its end, unix seconds), labelled with the criterion met last: process (the engine gone), memory (back to idle) or power (back to the baseline).",
	contract.RunIdleStable:      "1 when the idle phase was stable (power CV under the threshold, no compute process where the GPU can tell), else 0.",
}

type frozenRun struct {
	families map[string][]*dto.Metric
	at       int64 // when it froze (offset)
	expired  bool  // off /metrics: RunMetricsTTL passed since it froze
}

// settled reports whether run r can no longer change.
func settled(r *run) bool {
	if !r.ended {
		return false
	}
	for _, ph := range r.phases {
		if ph.end == nil || ph.start.left > 0 || ph.end.left > 0 {
			return false
		}
	}
	return true
}

// freezeRuns renders every newly settled run and takes the frozen runs
// whose RunMetricsTTL passed off /metrics. A gather holds freezeMu (read)
// across the live collectors and the frozen snapshot, so no scrape sees a
// run both live and frozen, or neither.
func (e *Exporter) freezeRuns() { e.freezeRunsAt(e.off(e.clock.Now())) }

// freezeRunsAt is freezeRuns at offset now.
func (e *Exporter) freezeRunsAt(now int64) {
	ttl := int64(e.cfg.RunMetricsTTL)
	e.mu.RLock()
	need := false
	for _, id := range e.lc.finished {
		r := e.lc.runs[id]
		if r == nil {
			continue
		}
		if r.frozen == nil && settled(r) || r.frozen != nil && !r.frozen.expired && ttl > 0 && now-r.frozen.at >= ttl {
			need = true
			break
		}
	}
	e.mu.RUnlock()
	if !need {
		return
	}
	e.freezeMu.Lock()
	defer e.freezeMu.Unlock()
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, id := range e.lc.finished {
		r := e.lc.runs[id]
		if r == nil {
			continue
		}
		if r.frozen != nil {
			if !r.frozen.expired && ttl > 0 && now-r.frozen.at >= ttl {
				r.frozen.expired = true
				e.frozenVersion++
				e.log.Debug("finished run left /metrics", "run_id", id, "ttl", e.cfg.RunMetricsTTL)
			}
			continue
		}
		if !settled(r) {
			continue
		}
		fr := &frozenRun{families: map[string][]*dto.Metric{}, at: now}
		emit := func(family string, m prometheus.Metric) {
			d := &dto.Metric{}
			if err := m.Write(d); err != nil {
				e.log.Error("rendering a finished run's metric", "run_id", id, "family", family, "err", err)
				return
			}
			fr.families[family] = append(fr.families[family], d)
		}
		e.phaseColl.emitRun(r, emit)
		e.runColl.emitRun(r, emit)
		r.frozen = fr
		e.frozenVersion++
	}
}

// frozenFamilies merges the series of every frozen run still on /metrics
// per family, sorted as a registry sorts them; rebuilt only when that set
// of runs changed.
func (e *Exporter) frozenFamilies() (map[string][]*dto.Metric, uint64) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	return e.frozenFamiliesLocked()
}

// frozenFamiliesLocked is frozenFamilies with e.mu held (read).
func (e *Exporter) frozenFamiliesLocked() (map[string][]*dto.Metric, uint64) {
	e.frozenMu.Lock()
	defer e.frozenMu.Unlock()
	version := e.frozenVersion + e.lc.evicted
	if e.frozenCache != nil && e.frozenCacheVersion == version {
		return e.frozenCache, e.frozenCacheVersion
	}
	fams := map[string][]*dto.Metric{}
	for _, id := range e.lc.finished {
		if r := e.lc.runs[id]; r != nil && r.frozen != nil && !r.frozen.expired {
			for name, ms := range r.frozen.families {
				fams[name] = append(fams[name], ms...)
			}
		}
	}
	for _, ms := range fams {
		slices.SortFunc(ms, compareMetrics)
	}
	e.frozenCache, e.frozenCacheVersion = fams, version
	return fams, e.frozenCacheVersion
}

// compareMetrics orders metrics of one family by their label values (label
// names are the same and sorted).
func compareMetrics(a, b *dto.Metric) int {
	la, lb := a.GetLabel(), b.GetLabel()
	for i := range min(len(la), len(lb)) {
		if c := strings.Compare(la[i].GetValue(), lb[i].GetValue()); c != 0 {
			return c
		}
	}
	return len(la) - len(lb)
}

// gatherer serves the contract registry, optionally the self-metrics, and
// the frozen runs' cached series.
type gatherer struct {
	e        *Exporter
	withSelf bool
}

// Gatherer gathers every contract metric (what /metrics serves besides the
// exporter's self-metrics).
func (e *Exporter) Gatherer() prometheus.Gatherer { return gatherer{e: e} }

func (g gatherer) Gather() ([]*dto.MetricFamily, error) {
	g.e.freezeMu.RLock()
	defer g.e.freezeMu.RUnlock()
	mfs, frozen, err := g.e.snapshot()
	if g.withSelf {
		self, serr := g.e.selfReg.Gather()
		mfs = append(mfs, self...)
		if err == nil {
			err = serr
		}
	}
	for name, ms := range frozen {
		i := slices.IndexFunc(mfs, func(mf *dto.MetricFamily) bool { return mf.GetName() == name })
		if i < 0 {
			n, help, typ := name, familyHelp[name], dto.MetricType_GAUGE
			mfs = append(mfs, &dto.MetricFamily{Name: &n, Help: &help, Type: &typ, Metric: ms})
			continue
		}
		mfs[i].Metric = mergeSorted(mfs[i].Metric, ms)
	}
	slices.SortFunc(mfs, func(a, b *dto.MetricFamily) int { return strings.Compare(a.GetName(), b.GetName()) })
	return mfs, err
}

// snapshot gathers the contract registry and the frozen runs under one
// read lock of e.mu, so a scrape renders the state of one instant: a GPU's
// energy, power, sample count and its runs' phase energies come from the
// same sample (each collector locking on its own could mix two). The
// collectors read the state without locking: they are gathered only here.
// The pod, host and remote-write collectors take their own locks (after
// e.mu, the documented order); none takes e.mu, which a goroutine must not
// read-lock twice.
func (e *Exporter) snapshot() ([]*dto.MetricFamily, map[string][]*dto.Metric, error) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	mfs, err := e.reg.Gather()
	frozen, _ := e.frozenFamiliesLocked()
	return mfs, frozen, err
}

// mergeSorted merges the few live metrics a into the sorted cached list b,
// into a new slice (the cached list is never modified): O(len(a)·log len(b))
// comparisons.
func mergeSorted(a, b []*dto.Metric) []*dto.Metric {
	out := make([]*dto.Metric, 0, len(a)+len(b))
	j := 0
	for _, m := range a {
		k, _ := slices.BinarySearchFunc(b[j:], m, compareMetrics)
		out = append(out, b[j:j+k]...)
		out = append(out, m)
		j += k
	}
	return append(out, b[j:]...)
}
