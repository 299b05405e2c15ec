package analyze

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"golang.org/x/sync/errgroup"

	"github.com/joulemark/joulemark/internal/contract"
	"github.com/joulemark/joulemark/internal/phaseapi"
	"github.com/joulemark/joulemark/internal/querysplit"
	"github.com/joulemark/joulemark/internal/remoteread"
	"github.com/joulemark/joulemark/internal/runarchive"
	"github.com/joulemark/joulemark/internal/secretfile"
)

// rawSampleMargin: raw samples are fetched beyond the run's span, for
// interpolation at its edges.
const rawSampleMargin = time.Minute

// loader reads one run from Prometheus.
type loader struct {
	api      v1.API
	runID    string
	lookback time.Duration
	now      time.Time
	timeout  time.Duration
	// chunk is the window length of raw reads (when 0, defaultRemoteChunk
	// through remote read, else defaultChunk); par
	// how many windows are read at once (defaultParallelism when 0).
	chunk time.Duration
	par   int
	// engineSel matches the run's engine series (see engineSelector).
	engineSel string
	// rr reads the raw series through remote read; nil: through the query
	// API. readFallback says why remote read was given up (remoteread.Auto).
	rr           *remoteread.Reader
	maxSamples   int64 // the query API's per-query sample limit (0: none)
	readAPI      string
	readFallback string
	log          *slog.Logger
	// arch is the bench's archived view of the run (nil: none): what
	// Prometheus lacks of boundaries, phase energies and release is taken
	// from it. wait bounds how long load waits for the run's final samples
	// (0: not at all).
	arch *archivedRun
	wait time.Duration
	// invalid counts the values left out as impossible (invalidValues).
	invalid invalidValues
}

// errRunNotFound says the run has no phase boundaries in Prometheus.
var errRunNotFound = errors.New("run not found")

// load reads the run's data from Prometheus through api, the raw series
// through rr (remote read; nil: the query API); arch, when set, is the
// run's bench archive, whose phases.json fills in what Prometheus lacks.
// It is where the loader takes its fields from cfg.
func load(ctx context.Context, cfg Config, api v1.API, rr *remoteread.Reader, arch *BenchArchive) (*RunData, error) {
	l := &loader{api: api, rr: rr, runID: cfg.RunID, lookback: cfg.Lookback, now: cfg.Now, timeout: cfg.QueryTimeout, engineSel: cfg.EngineSelector,
		readAPI: cfg.ReadAPI, log: cfg.Logger, wait: cfg.Wait, maxSamples: cfg.MaxSamples}
	if arch != nil {
		l.arch = combineViews(arch.views)
	}
	if !cfg.Now.IsZero() {
		l.wait = 0 // a fixed instant: nothing more will arrive
	}
	if l.log == nil {
		l.log = slog.New(slog.DiscardHandler)
	}
	if l.now.IsZero() {
		l.now = time.Now()
	}
	d, err := l.load(ctx)
	if err != nil {
		return nil, fmt.Errorf("loading run %q from %s: %w", cfg.RunID, secretfile.RedactURL(cfg.PrometheusURL), secretfile.SecretsOf(cfg.PrometheusURL).Error(err))
	}
	return d, nil
}

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

// load reads the run. Phase boundaries, exporter phase energies, release
// state and GPU identities are found with last_over_time over the lookback
// at now; the raw series are then read with range selectors evaluated at a
// time derived from the run's own boundaries, so the result does not depend
// on when analyze runs.
func (l *loader) load(ctx context.Context) (*RunData, error) {
	d := &RunData{RunID: l.runID, Phases: map[string]PhaseBounds{}, PhaseEnergy: map[string]float64{}}
	from, to, err := l.loadPhases(ctx, d)
	if err != nil {
		return nil, err
	}
	keys, err := l.loadPhaseEnergy(ctx, d)
	if err != nil {
		return nil, err
	}
	if err := l.loadRelease(ctx, d); err != nil {
		return nil, err
	}
	gpuSel, err := l.gpuSelector(ctx, keys)
	if err != nil {
		return nil, err
	}
	if l.wait > 0 {
		if from, to, err = l.settle(ctx, d, gpuSel, from, to); err != nil {
			return nil, err
		}
	}
	sp := l.rawSpan(from, to)
	if l.rr != nil {
		if err := l.chooseReadAPI(ctx, l.readAPI, sp); err != nil {
			return nil, err
		}
		sp = l.rawSpan(from, to) // the query API's windows if it fell back
	}
	// The GPUs (their instant queries and dense series) and the extras
	// are read beside the requests: they fill the CPU time the request
	// windows leave. The two sides fill different fields of d.
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		if err := l.loadGPUs(gctx, d, gpuSel, sp); err != nil {
			return err
		}
		return l.loadExtras(gctx, d, gpuSel, sp)
	})
	g.Go(func() error { return l.loadRequests(gctx, d, sp.windows) })
	if err := g.Wait(); err != nil {
		return nil, err
	}
	d.InvalidValues = l.invalid.list()
	d.ReadAPI, d.ReadFallback = remoteread.Query, l.readFallback
	if l.rr != nil {
		d.ReadAPI = remoteread.Remote
	}
	return d, nil
}

// loadPhases reads the phase boundaries into d and returns the run's span:
// the first start and the last start or end.
func (l *loader) loadPhases(ctx context.Context, d *RunData) (from, to float64, err error) {
	starts, err := l.vector(ctx, fmt.Sprintf("min by (phase) (%s)", l.lastOver(fmt.Sprintf("%s{%s}", contract.PhaseStart, l.runSel()))), l.now)
	if err != nil {
		return 0, 0, err
	}
	if len(starts) == 0 && l.arch == nil {
		return 0, 0, fmt.Errorf("%w: no %s{%s} within %s before %s (widen --lookback?)", errRunNotFound, contract.PhaseStart, l.runSel(), model.Duration(l.lookback), l.now.UTC().Format(time.RFC3339))
	}
	ends, err := l.vector(ctx, fmt.Sprintf("max by (phase) (%s)", l.lastOver(fmt.Sprintf("%s{%s}", contract.PhaseEnd, l.runSel()))), l.now)
	if err != nil {
		return 0, 0, err
	}
	for _, s := range starts {
		ph := string(s.Metric["phase"])
		b := d.Phases[ph]
		if v := float64(s.Value); v > 0 && !math.IsNaN(v) {
			b.Start, b.HasStart = v, true
		}
		d.Phases[ph] = b
	}
	for _, s := range ends {
		ph := string(s.Metric["phase"])
		b := d.Phases[ph]
		if v := float64(s.Value); v > 0 && !math.IsNaN(v) && (!b.HasStart || v >= b.Start) {
			b.End, b.HasEnd = v, true
		}
		d.Phases[ph] = b
	}
	// One lifecycle sets each phase's start once; a start that changed
	// within the lookback is a second lifecycle under the same id.
	sel := fmt.Sprintf("%s{%s}", contract.PhaseStart, l.runSel())
	restarted, err := l.vector(ctx, fmt.Sprintf("max by (phase) (max_over_time(%[1]s[%[2]s]) - min_over_time(%[1]s[%[2]s])) > 0",
		sel, promDuration(l.lookback)), l.now)
	if err != nil {
		return 0, 0, err
	}
	for _, s := range restarted {
		d.RestartedPhases = append(d.RestartedPhases, string(s.Metric["phase"]))
	}
	slices.Sort(d.RestartedPhases)
	if l.arch != nil {
		l.arch.fillPhases(d)
	}
	from, to = math.Inf(1), math.Inf(-1)
	for _, b := range d.Phases {
		if b.HasStart {
			from = min(from, b.Start)
			to = max(to, b.Start)
		}
		if b.HasEnd {
			to = max(to, b.End)
		}
	}
	if math.IsInf(from, 0) {
		return 0, 0, fmt.Errorf("%w: %s{%s} has no positive start timestamp within %s before %s, and the bench archive none either (widen --lookback?)", errRunNotFound, contract.PhaseStart, l.runSel(), model.Duration(l.lookback), l.now.UTC().Format(time.RFC3339))
	}
	return from, to, nil
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

// loadPhaseEnergy reads the exporter's phase energies into d (one value per
// GPU, a GPU being an instance and a UUID; max over duplicates of the same
// GPU, e.g. two scrape jobs) and returns the GPUs that have them.
func (l *loader) loadPhaseEnergy(ctx context.Context, d *RunData) (map[gpuKey]bool, error) {
	pe, err := l.vector(ctx, fmt.Sprintf("max by (instance, phase, uuid) (%s)", l.lastOver(fmt.Sprintf("%s{%s}", contract.PhaseEnergy, l.runSel()))), l.now)
	if err != nil {
		return nil, err
	}
	keys := map[gpuKey]bool{}
	for _, s := range pe {
		if s.Value < 0 {
			l.invalid.note(contract.PhaseEnergy)
			continue
		}
		d.PhaseEnergy[string(s.Metric["phase"])] += float64(s.Value)
		keys[keyOf(s.Metric)] = true
	}
	if l.arch != nil {
		l.arch.fillEnergy(d, keys)
	}
	return keys, nil
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

// loadRelease reads whether the exporter closed the run's release.
func (l *loader) loadRelease(ctx context.Context, d *RunData) error {
	rc, err := l.vector(ctx, fmt.Sprintf("min(%s)", l.lastOver(fmt.Sprintf("%s{%s}", contract.RunReleaseClosed, l.runSel()))), l.now)
	if err != nil {
		return err
	}
	if len(rc) == 1 {
		d.ReleaseClosed = new(rc[0].Value == 1)
	}
	// which criterion closed the release last, over every exporter
	by, err := l.vector(ctx, fmt.Sprintf("max by (criterion) (%s)", l.lastOver(fmt.Sprintf("%s{%s}", contract.RunReleaseClosedBy, l.runSel()))), l.now)
	if err != nil {
		return err
	}
	for _, s := range by {
		if v := float64(s.Value); d.ReleaseClosedAt == nil || v > *d.ReleaseClosedAt {
			d.ReleaseClosedBy, d.ReleaseClosedAt = string(s.Metric["criterion"]), &v
		}
	}
	if l.arch != nil {
		l.arch.fillRelease(d)
	}
	return nil
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

// gpuKey names a GPU by its host: the exporter's instance and the GPU's
// UUID. UUIDs alone do not: cloned VMs and simulated exporters may report
// the same ones on two hosts.
type gpuKey struct{ instance, uuid string }

// keyOf is the GPU a series belongs to.
func keyOf(m model.Metric) gpuKey {
	return gpuKey{instance: string(m["instance"]), uuid: string(m[contract.LabelUUID])}
}

// gpuSet is the run's GPUs: sel narrows the queries (PromQL matchers), and
// a series belongs to the run only when its (instance, uuid) is in keys
// (nil: every series sel matches). A key without an instance (known from
// the bench archive only) matches its UUID on any instance sel matches.
type gpuSet struct {
	sel     string
	uuidSel string // sel without the instances (rawSel)
	keys    map[gpuKey]bool
}

// has says whether series m is one of the run's GPUs.
func (s gpuSet) has(m model.Metric) bool {
	if s.keys == nil {
		return true
	}
	k := keyOf(m)
	return s.keys[k] || s.keys[gpuKey{uuid: k.uuid}]
}

// rawSel narrows the queries of the exporters' pushed raw series
// (joulemark_gpu_{energy,power}_sample_*): remote write labels them with
// the exporter's host name, not the scrape target's instance, so they are
// matched by UUID (see rawOwners).
func (s gpuSet) rawSel() string {
	if s.uuidSel != "" {
		return s.uuidSel
	}
	return s.sel
}

// rawOwners maps each raw series' key to the run GPU it belongs to: the
// one GPU of the run with its UUID (those the scraped series named, else
// keys), and only while a single pushed instance carries that UUID. A UUID two hosts
// push (cloned VMs, simulated exporters) is left to the scraped series,
// which name their instance.
func (s gpuSet) rawOwners(m []rawSeries, found []gpuKey) map[gpuKey]gpuKey {
	pushed := map[string]map[string]bool{}
	for _, ss := range m {
		k := keyOf(ss.metric)
		if pushed[k.uuid] == nil {
			pushed[k.uuid] = map[string]bool{}
		}
		pushed[k.uuid][k.instance] = true
	}
	cands := found // the GPUs the scraped series named, with their instance
	if len(cands) == 0 {
		cands = slices.Collect(maps.Keys(s.keys))
	}
	owner := map[gpuKey]gpuKey{}
	for uuid, insts := range pushed {
		var run []gpuKey
		for _, k := range cands {
			if k.uuid == uuid {
				run = append(run, k)
			}
		}
		if len(run) != 1 || len(insts) != 1 {
			continue
		}
		for inst := range insts {
			owner[gpuKey{instance: inst, uuid: uuid}] = run[0]
		}
	}
	return owner
}

// gpuSelector matches the run's GPUs: those with phase energies for the
// run, each on its own exporter instance; GPUs known from the archive only
// are looked for on the instances that published the run's phases; without
// any GPU, every GPU of those instances.
func (l *loader) gpuSelector(ctx context.Context, keys map[gpuKey]bool) (gpuSet, error) {
	insts := map[string]bool{}
	uuids := map[string]bool{}
	archiveOnly := false
	for k := range keys {
		uuids[k.uuid] = true
		if k.instance == "" {
			archiveOnly = true
		} else {
			insts[k.instance] = true
		}
	}
	if len(keys) == 0 || archiveOnly {
		vec, err := l.vector(ctx, fmt.Sprintf("max by (instance) (%s)", l.lastOver(fmt.Sprintf("%s{%s}", contract.PhaseStart, l.runSel()))), l.now)
		if err != nil {
			return gpuSet{}, err
		}
		for _, s := range vec {
			insts[string(s.Metric["instance"])] = true
		}
	}
	if len(keys) == 0 {
		return gpuSet{sel: "instance=~" + anyOf(slices.Sorted(maps.Keys(insts)))}, nil
	}
	uuidSel := "uuid=~" + anyOf(slices.Sorted(maps.Keys(uuids)))
	sel := uuidSel
	if len(insts) > 0 {
		sel = "instance=~" + anyOf(slices.Sorted(maps.Keys(insts))) + "," + uuidSel
	}
	return gpuSet{sel: sel, uuidSel: uuidSel, keys: keys}, nil
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

// rawSpan is where the raw series are read: range selectors of length rng
// evaluated at evalAt, or the same split into windows.
type rawSpan struct {
	evalAt  time.Time
	rng     string
	windows []window
}

// rawSpan covers the run's span plus a margin, as range selectors
// evaluated at the span's end: Prometheus returns the stored samples. Long
// spans are read in windows (see window), a few at a time.
func (l *loader) rawSpan(from, to float64) rawSpan {
	evalAtMs := int64(math.Ceil((to + rawSampleMargin.Seconds()) * 1000))
	rngDur := time.Duration((to-from)*float64(time.Second)) + 2*rawSampleMargin
	chunk := l.chunk
	switch {
	case chunk > 0:
	case l.rr != nil:
		chunk = defaultRemoteChunk
	default:
		chunk = defaultChunk
	}
	if l.par <= 0 {
		l.par = defaultParallelism
	}
	return rawSpan{
		evalAt:  time.UnixMilli(evalAtMs).UTC(),
		rng:     promDuration(rngDur),
		windows: splitSpan(evalAtMs, max(rngDur.Milliseconds(), 1), chunk.Milliseconds()),
	}
}

// Defaults of the chunked reader: a long run's raw series are read as range
// selectors over consecutive windows of this length, this many at a time.
// Remote read streams a window series by series, so its windows bound no
// memory and take a day: a server cuts (decodes and re-encodes) every
// chunk that crosses a window's edge and reads it twice, and sparse series
// (one per slot at high concurrency) have chunks a quarter of an hour long.
// At 1M requests over 2.8 h, 1-hour windows cost Prometheus 2.42 about
// 0.75 CPU-s, one window 0.3–0.5 (docs/analyze.md, "Reading raw series").
const (
	defaultChunk       = 30 * time.Minute
	defaultRemoteChunk = 24 * time.Hour
	defaultParallelism = 4
)

// window is one chunk of a raw read: the range selector [rng] evaluated at
// end (both whole milliseconds). Prometheus 3 returns the samples in
// (end−rng, end], Prometheus 2 in [end−rng, end]; every window but the first
// drops samples at or before its start (after), so consecutive windows
// partition the span under both and no sample is read twice or lost. The
// first window keeps what the server returns, as one selector over the whole
// span would.
type window struct {
	endMs, rngMs int64
	first        bool
}

// keep reports whether a sample at ts belongs to the window.
func (w window) keep(ts model.Time) bool { return w.first || int64(ts) > w.endMs-w.rngMs }

// selector renders sel as a range selector over the window.
func (w window) selector(sel string) string {
	return sel + "[" + promDuration(time.Duration(w.rngMs)*time.Millisecond) + "]"
}

// splitSpan cuts the span of rngMs milliseconds ending at endMs into windows
// of at most chunkMs, in time order; the last ends at endMs.
func splitSpan(endMs, rngMs, chunkMs int64) []window {
	rngMs, chunkMs = max(rngMs, 1), max(chunkMs, 1)
	start := endMs - rngMs
	var ws []window
	for from := start; from < endMs; from += chunkMs {
		to := min(from+chunkMs, endMs)
		ws = append(ws, window{endMs: to, rngMs: to - from, first: from == start})
	}
	return ws
}

// chooseReadAPI settles how the raw series are read, before the first raw
// read: with remoteread.Auto, a remote read of the run's phase starts over the
// span must succeed, else the query API is used (a server without remote
// read: VictoriaMetrics, a proxy that only passes the query API).
func (l *loader) chooseReadAPI(ctx context.Context, mode string, sp rawSpan) error {
	switch mode {
	case remoteread.Query:
		l.rr = nil
		return nil
	case remoteread.Remote:
		return nil
	}
	w := sp.windows[len(sp.windows)-1]
	_, err := l.rr.Read(ctx, fmt.Sprintf("%s{%s}", contract.PhaseStart, l.runSel()), w.endMs-w.rngMs, w.endMs)
	if err != nil {
		if ctx.Err() != nil {
			return err
		}
		l.readFallback = err.Error()
		l.rr = nil
		l.log.Info("remote read unavailable: the raw series are read through the query API (same report, more CPU)", "err", err)
		return nil
	}
	l.log.Debug("the raw series are read through remote read")
	return nil
}

// loadGPUs reads the GPUs' energy sources, the sampler interval and the
// GPUs' energy and power series into d.
func (l *loader) loadGPUs(ctx context.Context, d *RunData, gpuSel gpuSet, sp rawSpan) error {
	source, scope, err := l.loadGPUInfo(ctx, d, gpuSel, sp)
	if err != nil {
		return err
	}
	byKey := map[gpuKey]*GPUSeries{}
	var order []gpuKey
	pick := func(name string, set func(g *GPUSeries, s []Sample)) error {
		raw := name == contract.GPUEnergySample || name == contract.GPUPowerSample
		sel := gpuSel.sel
		if raw {
			sel = gpuSel.rawSel()
		}
		m, err := l.readSeries(ctx, fmt.Sprintf("%s{%s}", name, sel), sp.windows)
		if err != nil {
			return err
		}
		var owner map[gpuKey]gpuKey
		if raw {
			owner = gpuSel.rawOwners(m, order)
		}
		for _, ss := range m {
			k := keyOf(ss.metric)
			if raw {
				var ok bool
				if k, ok = owner[k]; !ok {
					continue // no one GPU of the run owns it
				}
			} else if !gpuSel.has(ss.metric) {
				continue // the same UUID on another host
			}
			g, ok := byKey[k]
			if !ok {
				g = &GPUSeries{GPU: string(ss.metric["gpu"]), UUID: k.uuid, Instance: k.instance, EnergySource: source[k], EnergyScope: scope[k]}
				byKey[k] = g
				order = append(order, k)
			}
			set(g, ss.samples)
		}
		return nil
	}
	// The same GPU seen by two scrape jobs: keep the series with more samples.
	if err := pick(contract.GPUEnergy, func(g *GPUSeries, s []Sample) {
		if len(s) > len(g.Energy) {
			g.Energy = s
		}
	}); err != nil {
		return err
	}
	if err := pick(contract.GPUEnergySample, func(g *GPUSeries, s []Sample) {
		if len(s) > len(g.Energy) {
			g.Energy = s
			g.EnergyRaw = true
		}
	}); err != nil {
		return err
	}
	if err := pick(contract.GPUPower, func(g *GPUSeries, s []Sample) {
		if len(s) > len(g.Power) {
			g.Power = s
		}
	}); err != nil {
		return err
	}
	if err := pick(contract.GPUPowerSample, func(g *GPUSeries, s []Sample) {
		if len(s) > len(g.Power) {
			g.Power = s
			g.PowerRaw = true
		}
	}); err != nil {
		return err
	}
	for _, k := range order {
		d.GPUs = append(d.GPUs, *byKey[k])
	}
	return nil
}

// loadGPUInfo reads each GPU's energy source and scope (gpu_info) and the
// sampler interval into d.
func (l *loader) loadGPUInfo(ctx context.Context, d *RunData, gpuSel gpuSet, sp rawSpan) (source, scope map[gpuKey]string, err error) {
	info, err := l.gpuInfo(ctx, gpuSel, sp)
	if err != nil {
		return nil, nil, err
	}
	source, scope = map[gpuKey]string{}, map[gpuKey]string{}
	for _, m := range info {
		source[keyOf(m)] = string(m["energy_source"])
		scope[keyOf(m)] = string(m["energy_scope"])
	}
	si, err := l.vector(ctx, fmt.Sprintf("max(max_over_time(joulemark_sampler_interval_seconds[%s]))", sp.rng), sp.evalAt)
	if err != nil {
		return nil, nil, err
	}
	if len(si) == 1 && !math.IsNaN(float64(si[0].Value)) {
		d.SamplerIntervalSeconds = float64(si[0].Value)
	}
	return source, scope, nil
}

// gpuInfo lists the labels of the run's gpu_info series with a sample in
// the span: through remote read, the series as stored (the server streams
// their chunks); through the query API, one last_over_time over them.
func (l *loader) gpuInfo(ctx context.Context, gpuSel gpuSet, sp rawSpan) ([]model.Metric, error) {
	sel := fmt.Sprintf("%s{%s}", contract.GPUInfo, gpuSel.sel)
	if l.rr == nil {
		vec, err := l.vector(ctx, fmt.Sprintf("max by (instance, gpu, uuid, energy_source, energy_scope) (last_over_time(%s[%s]))", sel, sp.rng), sp.evalAt)
		if err != nil {
			return nil, err
		}
		out := make([]model.Metric, len(vec))
		for i, s := range vec {
			out[i] = s.Metric
		}
		return out, nil
	}
	var out []model.Metric
	for _, w := range sp.windows {
		err := l.rangeEach(ctx, sel, w, func(m model.Metric, vals []model.SamplePair, _ bool) {
			if slices.ContainsFunc(vals, func(v model.SamplePair) bool { return w.keep(v.Timestamp) }) {
				out = append(out, m)
			}
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// loadExtras reads what the report holds beside GPU energy and requests:
// the run's identity, host energy, GPU memory and the engine's own metrics.
func (l *loader) loadExtras(ctx context.Context, d *RunData, gpuSel gpuSet, sp rawSpan) error {
	if err := l.loadRunInfo(ctx, d); err != nil {
		return err
	}
	if err := l.loadGPUSeries(ctx, d, gpuSel, sp, contract.GPUMemoryUsed, func(g *GPUSeries) *[]Sample { return &g.Memory }); err != nil {
		return err
	}
	if err := l.loadGPUSeries(ctx, d, gpuSel, sp, contract.GPUUtilization, func(g *GPUSeries) *[]Sample { return &g.Utilization }); err != nil {
		return err
	}
	if err := l.loadEngine(ctx, d, sp); err != nil {
		return err
	}
	return l.loadHost(ctx, d, sp)
}

// loadRunInfo reads the run's joulemark_run_info labels into d (nil when the
// bench job pushed none, e.g. without remote write).
func (l *loader) loadRunInfo(ctx context.Context, d *RunData) error {
	vec, err := l.vector(ctx, l.lastOver(fmt.Sprintf("%s{%s}", contract.RunInfo, l.runSel())), l.now)
	if err != nil {
		return err
	}
	if len(vec) == 0 {
		return nil
	}
	// Several series (a re-push with other labels): the latest wins.
	best := vec[0]
	for _, s := range vec[1:] {
		if s.Timestamp > best.Timestamp {
			best = s
		}
	}
	lbls := map[string]string{}
	for k, v := range best.Metric {
		lbls[string(k)] = string(v)
	}
	info := contract.RunIdentityFromLabels(lbls)
	d.RunInfo = &info
	return nil
}

// loadGPUSeries reads metric for each run GPU into the series field
// picks of its d.GPUs entry (the longest series of that GPU wins).
func (l *loader) loadGPUSeries(ctx context.Context, d *RunData, gpuSel gpuSet, sp rawSpan, metric string, field func(*GPUSeries) *[]Sample) error {
	m, err := l.readSeries(ctx, fmt.Sprintf("%s{%s}", metric, gpuSel.sel), sp.windows)
	if err != nil {
		return err
	}
	for _, ss := range m {
		k := keyOf(ss.metric)
		for i := range d.GPUs {
			f := field(&d.GPUs[i])
			if d.GPUs[i].UUID == k.uuid && d.GPUs[i].Instance == k.instance && len(ss.samples) > len(*f) {
				*f = ss.samples
			}
		}
	}
	return nil
}

// loadEngine reads the engine's metrics over the run span.
func (l *loader) loadEngine(ctx context.Context, d *RunData, sp rawSpan) error {
	var names []string
	for _, r := range engineMetricRoles {
		names = append(names, r.names...)
	}
	sel := engineSelector(l.engineSel, d)
	q := "{__name__=~" + anyOf(names)
	if sel != "" {
		q += "," + sel
	}
	q += "}"
	m, err := l.readSeries(ctx, q, sp.windows)
	if err != nil {
		return err
	}
	ed := &EngineData{Selector: sel, Series: map[string][][]Sample{}}
	for _, ss := range m {
		n := string(ss.metric["__name__"])
		ed.Series[n] = append(ed.Series[n], ss.samples)
	}
	d.Engine = ed
	return nil
}

// engineSelector is the label matcher of the run's engine series: the
// configured one, else model_name of the run identity, else none.
func engineSelector(configured string, d *RunData) string {
	switch {
	case configured != "":
		return configured
	case d.RunInfo != nil && d.RunInfo.Model != "":
		return "model_name=" + strconv.Quote(d.RunInfo.Model)
	}
	return ""
}

// loadHost reads the run's host energy: phase energies, counters and the
// exporters' unavailability reasons.
func (l *loader) loadHost(ctx context.Context, d *RunData, sp rawSpan) error {
	insts, err := l.vector(ctx, fmt.Sprintf("max by (instance) (%s)", l.lastOver(fmt.Sprintf("%s{%s}", contract.PhaseStart, l.runSel()))), l.now)
	if err != nil {
		return err
	}
	var names []string
	for _, s := range insts {
		names = append(names, string(s.Metric["instance"]))
	}
	instSel := "instance=~" + anyOf(names)
	h := &HostData{PhaseEnergy: map[string]float64{}, Unavailable: map[string]string{}}
	pe, err := l.vector(ctx, fmt.Sprintf("max by (instance, phase, zone, domain) (%s)", l.lastOver(fmt.Sprintf("%s{%s}", contract.PhaseHostEnergy, l.runSel()))), l.now)
	if err != nil {
		return err
	}
	zones := map[string]bool{}
	for _, s := range pe {
		if !inHostTotal(string(s.Metric["domain"])) {
			continue
		}
		h.PhaseEnergy[string(s.Metric["phase"])] += float64(s.Value)
		zones[fmt.Sprintf("%s %s (%s)", s.Metric["instance"], s.Metric["zone"], s.Metric["domain"])] = true
	}
	h.Zones = slices.Sorted(maps.Keys(zones))
	un, err := l.vector(ctx, fmt.Sprintf("max by (instance, reason) (max_over_time(%s{%s}[%s]))", contract.HostEnergyUnavail, instSel, sp.rng), sp.evalAt)
	if err != nil {
		return err
	}
	for _, s := range un {
		if s.Value == 1 {
			h.Unavailable[string(s.Metric["instance"])] = string(s.Metric["reason"])
		}
	}
	m, err := l.readSeries(ctx, fmt.Sprintf("%s{%s}", contract.HostEnergy, instSel), sp.windows)
	if err != nil {
		return err
	}
	for _, ss := range m {
		if inHostTotal(string(ss.metric["domain"])) {
			h.Counters = append(h.Counters, ss.samples)
		}
	}
	if len(h.PhaseEnergy) > 0 || len(h.Unavailable) > 0 || len(h.Counters) > 0 {
		d.Host = h
	}
	return nil
}

// Per-request metrics, in the order loadRequests keeps them.
const (
	rOut = iota
	rIn
	rTTFT
	rLat
	rSucc
	nReqMetrics
)

var reqMetrics = [nReqMetrics]string{rOut: contract.RequestOutputTokens, rIn: contract.RequestInputTokens, rTTFT: contract.RequestTTFT, rLat: contract.RequestLatency, rSucc: contract.RequestSuccess}

// reqPart is what one window yields: each series' requests and the count of
// incomplete sample groups.
type reqPart struct {
	series     []reqSeriesPart
	incomplete int
}

type reqSeriesPart struct {
	fp     model.Fingerprint
	metric model.Metric
	reqs   []reqVals
}

// reqVals is a Request without its series' phase and slot and without
// what follows from the rest (send = end − latency, computed by the same
// operations when copied): the per-window parts hold these (40 bytes
// instead of 64) until loadRequests copies them into RunData.Requests,
// which both live at that moment. join holds requestWindow's joinBits
// while the window's metrics are merged in.
type reqVals struct {
	endMs                     int64 // the samples' timestamp (ms): End is endMs/1000
	ttft, latency             float64
	outputTokens, inputTokens int32
	hasTTFT, success          bool
	join                      uint8
}

// joinBits: which of a request's samples were merged in, and whether
// one was impossible.
const (
	joinOut = 1 << iota
	joinLat
	joinSucc
	joinBad
)

// loadRequests joins the per-request samples that share their labels (all
// but __name__) and timestamp into requests. The five metrics are read
// window by window; the samples of one request share a timestamp, so they
// fall in the same window, where they are joined by a merge over the five
// sorted sample lists of each series (O(samples), no per-request map) and
// the window's matrices are dropped. d.Requests lists the requests in
// completion order (end, then send, slot and the series' label order, as
// Prometheus 3 sorts a matrix), whatever the windows: the analysis then
// walks them in memory order.
func (l *loader) loadRequests(ctx context.Context, d *RunData, ws []window) error {
	var (
		ids     = map[model.Fingerprint]int32{}
		metrics []model.Metric   // by series ID, in the order first read
		windows [][]seriesValues // each window's requests, by series
		total   int
	)
	err := inOrder(ctx, len(ws), l.par, func(ctx context.Context, i int) (reqPart, error) {
		return l.requestWindow(ctx, ws[i])
	}, func(_ int, p reqPart) error {
		d.IncompleteRequests += p.incomplete
		parts := make([]seriesValues, 0, len(p.series))
		for _, sp := range p.series {
			id, ok := ids[sp.fp]
			if !ok {
				id = int32(len(metrics))
				ids[sp.fp] = id
				metrics = append(metrics, sp.metric)
			}
			parts = append(parts, seriesValues{id, sp.reqs})
			total += len(sp.reqs)
		}
		windows = append(windows, parts)
		return nil
	})
	if err != nil {
		return err
	}
	if total > maxRequests {
		return fmt.Errorf("%d requests, more than the %d one analysis takes", total, maxRequests)
	}
	d.Requests = make([]Request, total)
	fillInCompletionOrder(d.Requests, windows, requestSeriesOf(metrics))
	return nil
}

// seriesValues are one series' requests in one window, in time order.
type seriesValues struct {
	id   int32 // the series' index in requestSeriesOf's list
	reqs []reqVals
}

// requestSeries is what a request takes from its series' labels.
type requestSeries struct {
	formal    bool
	slot      int32 // Request.SlotRank
	labelRank int32 // the series' place in label order
}

// requestSeriesOf lists each series' formal flag, slot rank and place in
// label order, by series ID.
func requestSeriesOf(metrics []model.Metric) []requestSeries {
	slots := make([]string, len(metrics))
	byLabels := make([]int32, len(metrics))
	for i, m := range metrics {
		slots[i], byLabels[i] = string(m["slot"]), int32(i)
	}
	sortByLabels(byLabels, func(i int32) model.Metric { return metrics[i] })
	ranks := SlotRanks(slots)
	out := make([]requestSeries, len(metrics))
	for rank, i := range byLabels {
		out[i] = requestSeries{formal: metrics[i]["phase"] == "formal", slot: ranks[slots[i]], labelRank: int32(rank)}
	}
	return out
}

// fillInCompletionOrder fills reqs (zeroed, as long as all windows'
// requests) in completion order: by end, then send, slot and the series'
// label order. The windows partition time, so each window's requests
// follow the last window's: each is sorted and filled on its own, beside
// the others, and dropped once filled.
func fillInCompletionOrder(reqs []Request, windows [][]seriesValues, series []requestSeries) {
	offsets := make([]int, len(windows)+1)
	for w, parts := range windows {
		offsets[w+1] = offsets[w]
		for _, p := range parts {
			offsets[w+1] += len(p.reqs)
		}
	}
	eachIndex(len(windows), func(w int) {
		fillWindow(reqs[offsets[w]:offsets[w+1]], windows[w], series)
		windows[w] = nil
	})
}

// fillWindow fills out with one window's requests in completion order
// (a window can hold every request of the run): cut by end into pieces
// of about equal size (endCuts), each piece's requests then listed,
// sorted by end and filled beside the others'. A series has one request
// a timestamp, so requests that end together are of different series.
func fillWindow(out []Request, parts []seriesValues, series []requestSeries) {
	cuts := endCuts(parts, len(out), runtime.GOMAXPROCS(0), minFillPiece)
	// at[k][i] is where piece k starts in parts[i] (at[len(cuts)+1][i]: its end).
	at := make([][]int, len(cuts)+2)
	at[0], at[len(cuts)+1] = make([]int, len(parts)), make([]int, len(parts))
	for i, p := range parts {
		at[len(cuts)+1][i] = len(p.reqs)
	}
	for k, cut := range cuts {
		at[k+1] = make([]int, len(parts))
		for i, p := range parts {
			at[k+1][i] = sort.Search(len(p.reqs), func(j int) bool { return endKey(p.reqs[j].endMs) >= cut })
		}
	}
	offsets := make([]int, len(at))
	for k := 1; k < len(at); k++ {
		offsets[k] = offsets[k-1]
		for i := range parts {
			offsets[k] += at[k][i] - at[k-1][i]
		}
	}
	eachIndex(len(at)-1, func(k int) {
		refs := make([]requestRef, 0, offsets[k+1]-offsets[k])
		for i, p := range parts {
			for j := at[k][i]; j < at[k+1][i]; j++ {
				refs = append(refs, requestRef{endKey(p.reqs[j].endMs), int32(i), int32(j)})
			}
		}
		radixSortBy(refs, func(r requestRef) uint64 { return r.key })
		fillPiece(out[offsets[k]:offsets[k+1]], refs, parts, series)
	})
}

// requestRef is a request of a window's parts, keyed by its end.
type requestRef struct {
	key       uint64 // endKey
	part, pos int32
}

// endKey is a request's end in milliseconds, sign flipped: unsigned order
// is time order.
func endKey(endMs int64) uint64 { return uint64(endMs) ^ 1<<63 }

// minFillPiece is the fewest requests fillWindow fills on a goroutine of
// their own (a variable for tests).
var minFillPiece = 1 << 16

// endCuts cuts the n requests of parts (each part in time order) into at
// most pieces pieces, and no more than n/minLen, of about equal size:
// the ends (endKey) where a piece starts, in increasing order, so that
// requests that end together are never split. The cuts are quantiles of
// a sample of every part's ends; nil for one piece.
func endCuts(parts []seriesValues, n, pieces, minLen int) []uint64 {
	pieces = max(1, min(pieces, n/max(minLen, 1)))
	if pieces == 1 {
		return nil
	}
	// A sample of 1024 ends a piece, evenly spaced over the parts laid
	// end to end: each part has its share, wherever its ends lie.
	stride := max(1, float64(n)/float64(pieces*1024))
	var sample []uint64
	at, base := stride/2, 0
	for _, p := range parts {
		for ; at < float64(base+len(p.reqs)); at += stride {
			sample = append(sample, endKey(p.reqs[int(at)-base].endMs))
		}
		base += len(p.reqs)
	}
	slices.Sort(sample)
	var cuts []uint64
	for k := 1; k < pieces; k++ {
		c := sample[len(sample)*k/pieces]
		if c > sample[0] && (len(cuts) == 0 || c > cuts[len(cuts)-1]) {
			cuts = append(cuts, c)
		}
	}
	return cuts
}

// fillPiece fills out with the requests refs (sorted by end) in completion
// order: ties on end broken by send, slot and the series' label order.
func fillPiece(out []Request, refs []requestRef, parts []seriesValues, series []requestSeries) {
	sortRuns(refs, func(a, b requestRef) bool { return a.key == b.key }, func(a, b requestRef) int {
		pa, pb := &parts[a.part], &parts[b.part]
		va, vb := &pa.reqs[a.pos], &pb.reqs[b.pos]
		// Send as fillRequest computes it.
		if c := cmp.Compare(float64(va.endMs)/1000-va.latency, float64(vb.endMs)/1000-vb.latency); c != 0 {
			return c
		}
		sa, sb := series[pa.id], series[pb.id]
		if c := cmp.Compare(sa.slot, sb.slot); c != 0 {
			return c
		}
		return cmp.Compare(sa.labelRank, sb.labelRank)
	})
	for k, r := range refs {
		p := &parts[r.part]
		s := series[p.id]
		fillRequest(&out[k], &p.reqs[r.pos], s.formal, s.slot)
	}
}

// fillRequest sets the zeroed request r from its series' values v.
func fillRequest(r *Request, v *reqVals, formal bool, slot int32) {
	end := float64(v.endMs) / 1000
	r.SlotRank = slot
	r.Send, r.End, r.Latency = end-v.latency, end, v.latency
	r.OutputTokens, r.InputTokens = v.outputTokens, v.inputTokens
	r.HasTTFT, r.Success, r.Formal = v.hasTTFT, v.success, formal
	if v.hasTTFT {
		r.TTFT = v.ttft
	}
}

// requestWindow reads the five per-request metrics over one window and joins
// them into requests: each series' samples are merged into its requests
// (one per timestamp) as they are read, latency first, so the window's
// samples are never held.
func (l *loader) requestWindow(ctx context.Context, w window) (reqPart, error) {
	index := map[model.Fingerprint]int{}
	var p reqPart
	for _, m := range [nReqMetrics]int{rLat, rOut, rIn, rTTFT, rSucc} {
		err := l.rangeEach(ctx, fmt.Sprintf("%s{%s}", reqMetrics[m], l.runSel()), w, func(ls model.Metric, vals []model.SamplePair, _ bool) {
			for len(vals) > 0 && !w.keep(vals[0].Timestamp) {
				vals = vals[1:]
			}
			if len(vals) == 0 {
				return
			}
			delete(ls, model.MetricNameLabel)
			fp := ls.Fingerprint()
			k, ok := index[fp]
			if !ok {
				k = len(p.series)
				index[fp] = k
				p.series = append(p.series, reqSeriesPart{fp: fp, metric: ls})
			}
			p.series[k].reqs = mergeSamples(p.series[k].reqs, vals, m)
		})
		if err != nil {
			return reqPart{}, err
		}
	}
	for k := range p.series {
		sp := &p.series[k]
		kept := sp.reqs[:0]
		for _, r := range sp.reqs {
			if r.join != joinOut|joinLat|joinSucc {
				p.incomplete++
				continue
			}
			r.join = 0
			kept = append(kept, r)
		}
		sp.reqs = kept
	}
	p.series = slices.DeleteFunc(p.series, func(sp reqSeriesPart) bool { return len(sp.reqs) == 0 })
	return p, nil
}

// mergeSamples sets metric m of the requests reqs (in time order) from its
// samples vals (in time order), adding a request for a timestamp that has
// none yet. A request needs its output tokens, latency and success, each
// possible (a NaN success, a negative or fractional token count, a NaN
// latency are not), and takes its input tokens (0 when absent) and TTFT
// where they are possible; else its group counts as incomplete.
func mergeSamples(reqs []reqVals, vals []model.SamplePair, m int) []reqVals {
	// Usually every timestamp has its request already (latency came
	// first): set them in place, until one has none.
	i := 0
	for k, s := range vals {
		t := int64(s.Timestamp)
		for i < len(reqs) && reqs[i].endMs < t {
			i++
		}
		if i == len(reqs) || reqs[i].endMs != t {
			return mergeRest(reqs, vals[k:], m)
		}
		reqs[i].set(m, float64(s.Value))
		i++
	}
	return reqs
}

// mergeRest is mergeSamples from the first sample vals[0] without a
// request in reqs (those before it set already): a merge into a new list.
func mergeRest(reqs []reqVals, vals []model.SamplePair, m int) []reqVals {
	out := make([]reqVals, 0, len(reqs)+len(vals))
	i := 0
	for _, s := range vals {
		t := int64(s.Timestamp)
		for ; i < len(reqs) && reqs[i].endMs < t; i++ {
			out = append(out, reqs[i])
		}
		if i < len(reqs) && reqs[i].endMs == t {
			out = append(out, reqs[i])
			i++
		} else {
			out = append(out, reqVals{endMs: t})
		}
		out[len(out)-1].set(m, float64(s.Value))
	}
	return append(out, reqs[i:]...)
}

// set sets metric m of r to v, noting the sample and whether it is possible.
func (r *reqVals) set(m int, v float64) {
	ok := true
	switch m {
	case rLat:
		r.latency, r.join, ok = v, r.join|joinLat, plausibleDuration(v)
	case rOut:
		var n int64
		n, ok = tokenCount(v)
		r.outputTokens, r.join = int32(n), r.join|joinOut
	case rIn:
		var n int64
		n, ok = tokenCount(v)
		r.inputTokens = int32(n)
	case rSucc:
		r.success, ok = successValue(v)
		r.join |= joinSucc
	case rTTFT:
		if plausibleDuration(v) {
			r.hasTTFT, r.ttft = true, v
		}
	}
	if !ok {
		r.join |= joinBad
	}
}

// rawSeries is one series read over all windows: its labels and samples.
type rawSeries struct {
	metric  model.Metric
	samples []Sample
}

// readSeries reads sel over the windows and returns each series' samples
// merged across windows, series in Prometheus' own order (sorted by labels,
// as Prometheus 3 returns a matrix). Each window's matrix is converted to
// compact samples and dropped as soon as it is read.
func (l *loader) readSeries(ctx context.Context, sel string, ws []window) ([]rawSeries, error) {
	type part struct {
		metric  model.Metric
		samples []Sample
	}
	// Each series' samples, window by window: copied once, at the end.
	type acc struct {
		metric model.Metric
		parts  [][]Sample
		n      int
	}
	series := map[model.Fingerprint]*acc{}
	// An engine's own NaN is its business: only joulemark's are noted.
	metric := queryMetric(sel)
	ours := strings.HasPrefix(metric, "joulemark_")
	err := inOrder(ctx, len(ws), l.par, func(ctx context.Context, i int) ([]part, error) {
		// Each series' samples converted as it arrives: the window's
		// samples are never held as a matrix too.
		var parts []part
		err := l.rangeEach(ctx, sel, ws[i], func(m model.Metric, values []model.SamplePair, _ bool) {
			s := make([]Sample, 0, len(values))
			for _, p := range values {
				switch v := float64(p.Value); {
				case !ws[i].keep(p.Timestamp):
				case math.IsNaN(v) || math.IsInf(v, 0):
					if ours {
						l.invalid.note(metric)
					}
				default:
					s = append(s, Sample{T: float64(p.Timestamp) / 1000, V: v})
				}
			}
			parts = append(parts, part{m, s})
		})
		if err != nil {
			return nil, err
		}
		return parts, nil
	}, func(_ int, parts []part) error {
		for _, p := range parts {
			if len(p.samples) == 0 {
				continue
			}
			fp := p.metric.Fingerprint()
			a, ok := series[fp]
			if !ok {
				a = &acc{metric: p.metric}
				series[fp] = a
			}
			if k := len(a.parts); k > 0 {
				last := a.parts[k-1]
				if p.samples[0].T <= last[len(last)-1].T {
					return fmt.Errorf("query %s: samples of %s out of time order across windows", sel, p.metric)
				}
			}
			a.parts = append(a.parts, p.samples)
			a.n += len(p.samples)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := make([]rawSeries, 0, len(series))
	for _, a := range series {
		s := a.parts[0] // a series within one window: no copy
		if len(a.parts) > 1 {
			s = make([]Sample, 0, a.n)
			for k, p := range a.parts {
				s = append(s, p...)
				a.parts[k] = nil
			}
		}
		out = append(out, rawSeries{metric: a.metric, samples: s})
	}
	sortByLabels(out, func(s rawSeries) model.Metric { return s.metric })
	return out, nil
}

// rangeRead is the samples of sel in window w: the range selector
// evaluated at the window's end through the query API (split in time
// where it would exceed the sample limit), or the same samples through
// remote read.
func (l *loader) rangeRead(ctx context.Context, sel string, w window) (model.Matrix, error) {
	if l.rr == nil {
		split := querysplit.Reader{API: l.api, MaxSamples: l.maxSamples, Timeout: l.timeout}
		return split.Read(ctx, sel, w.endMs-w.rngMs, w.endMs)
	}
	return l.rr.Read(ctx, sel, w.endMs-w.rngMs, w.endMs)
}

// rangeEach hands f each series of sel in window w, as rangeRead returns
// them, without holding the window's matrix when reading through remote
// read. reused is true when the samples lie in a buffer reused for the
// next series: f then copies what it keeps.
func (l *loader) rangeEach(ctx context.Context, sel string, w window, f func(metric model.Metric, samples []model.SamplePair, reused bool)) error {
	if l.rr == nil {
		m, err := l.rangeRead(ctx, sel, w)
		if err != nil {
			return err
		}
		for _, ss := range m {
			f(ss.Metric, ss.Values, false)
		}
		return nil
	}
	return l.rr.Each(ctx, sel, w.endMs-w.rngMs, w.endMs, func(metric model.Metric, samples []model.SamplePair) error {
		f(metric, samples, true)
		return nil
	})
}

// inOrder runs fetch(0..n−1) with at most par calls in flight and hands each
// result to merge in index order, on the calling goroutine. A result waits
// for its merge before another fetch starts, so at most par results are held
// at once. The first error (of a fetch or a merge) cancels the rest and is
// returned; inOrder returns only after every fetch has returned.
func inOrder[T any](ctx context.Context, n, par int, fetch func(ctx context.Context, i int) (T, error), merge func(i int, v T) error) error {
	type result struct {
		v   T
		err error
	}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	results := make([]chan result, n)
	for i := range results {
		results[i] = make(chan result, 1)
	}
	slots := make(chan struct{}, max(par, 1))
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := range n {
			select {
			case slots <- struct{}{}:
			case <-ctx.Done():
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				v, err := fetch(ctx, i)
				results[i] <- result{v, err}
			}()
		}
	}()
	for i := range n {
		var r result
		select {
		case r = <-results[i]:
		case <-ctx.Done():
			return ctx.Err()
		}
		if r.err != nil {
			return r.err
		}
		if err := merge(i, r.v); err != nil {
			return err
		}
		<-slots
	}
	return nil
}

// sortByLabels sorts items by their labels as Prometheus sorts a matrix
// (labels.Compare), so the order does not depend on the windows.
func sortByLabels[T any](items []T, metric func(T) model.Metric) {
	keys := make([]labels.Labels, len(items))
	idx := make([]int, len(items))
	for i, it := range items {
		b := labels.NewScratchBuilder(len(metric(it)))
		for k, v := range metric(it) {
			b.Add(string(k), string(v))
		}
		b.Sort()
		keys[i], idx[i] = b.Labels(), i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return labels.Compare(keys[a], keys[b]) })
	sorted := make([]T, len(items))
	for i, j := range idx {
		sorted[i] = items[j]
	}
	copy(items, sorted)
}

// runSel is the run_id matcher, quoted for PromQL.
func (l *loader) runSel() string { return "run_id=" + strconv.Quote(l.runID) }

// lastOver wraps a selector in last_over_time over the lookback.
func (l *loader) lastOver(sel string) string {
	return fmt.Sprintf("last_over_time(%s[%s])", sel, promDuration(l.lookback))
}

// promDuration renders d as a PromQL duration in whole milliseconds.
func promDuration(d time.Duration) string {
	return strconv.FormatInt(max(d.Milliseconds(), 1), 10) + "ms"
}

// anyOf is a quoted PromQL regexp matching exactly the given values.
func anyOf(vals []string) string {
	alts := make([]string, len(vals))
	for i, v := range vals {
		alts[i] = regexp.QuoteMeta(v)
	}
	return strconv.Quote(strings.Join(alts, "|"))
}

func (l *loader) query(ctx context.Context, q string, at time.Time) (model.Value, error) {
	var opts []v1.Option
	if l.timeout > 0 {
		opts = append(opts, v1.WithTimeout(l.timeout))
	}
	v, _, _, err := l.api.Query(ctx, q, at, opts...)
	if err != nil {
		return nil, fmt.Errorf("query %s at %s: %w", q, at.UTC().Format(time.RFC3339), err)
	}
	return v, nil
}

func (l *loader) vector(ctx context.Context, q string, at time.Time) (model.Vector, error) {
	v, err := l.query(ctx, q, at)
	if err != nil {
		return nil, err
	}
	vec, ok := v.(model.Vector)
	if !ok {
		return nil, fmt.Errorf("query %s: got a %s, want a vector", q, v.Type())
	}
	return l.invalid.finite(q, vec), nil
}

// invalidValues counts, per metric, the values Prometheus answered that
// cannot be (NaN, ±Inf, out of range): they are left out and the report
// flagged prometheus_values_invalid. Safe for concurrent use.
type invalidValues struct {
	mu sync.Mutex
	n  map[string]int
}

// note counts one invalid value of metric.
func (iv *invalidValues) note(metric string) {
	iv.mu.Lock()
	defer iv.mu.Unlock()
	if iv.n == nil {
		iv.n = map[string]int{}
	}
	iv.n[metric]++
}

// list is "metric: count" per metric, sorted; nil when none.
func (iv *invalidValues) list() []string {
	iv.mu.Lock()
	defer iv.mu.Unlock()
	var out []string
	for m, n := range iv.n {
		out = append(out, fmt.Sprintf("%s: %d", m, n))
	}
	slices.Sort(out)
	return out
}

// finite drops the samples of vec whose value is NaN or ±Inf, noting each
// under the metric named in q.
func (iv *invalidValues) finite(q string, vec model.Vector) model.Vector {
	out := vec[:0]
	for _, s := range vec {
		if v := float64(s.Value); math.IsNaN(v) || math.IsInf(v, 0) {
			iv.note(queryMetric(q))
			continue
		}
		out = append(out, s)
	}
	return out
}

// queryMetric is the first joulemark_ metric name q mentions, else q.
func queryMetric(q string) string {
	i := strings.Index(q, "joulemark_")
	if i < 0 {
		return q
	}
	j := i
	for j < len(q) && (q[j] == '_' || q[j] >= 'a' && q[j] <= 'z' || q[j] >= '0' && q[j] <= '9') {
		j++
	}
	return q[i:j]
}
