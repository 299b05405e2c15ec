package analyze

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	"golang.org/x/sync/errgroup"

	"github.com/joulemark/joulemark/internal/contract"
	"github.com/joulemark/joulemark/internal/remoteread"
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
	// invalid counts the values left out as impossible (plausible.go).
	invalid invalidValues
}

// runSel is the run_id matcher, quoted for PromQL.
func (l *loader) runSel() string { return "run_id=" + strconv.Quote(l.runID) }

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

// promDuration renders d as a PromQL duration in whole milliseconds.
func promDuration(d time.Duration) string {
	return strconv.FormatInt(max(d.Milliseconds(), 1), 10) + "ms"
}

// lastOver wraps a selector in last_over_time over the lookback.
func (l *loader) lastOver(sel string) string {
	return fmt.Sprintf("last_over_time(%s[%s])", sel, promDuration(l.lookback))
}

// errRunNotFound says the run has no phase boundaries in Prometheus.
var errRunNotFound = errors.New("run not found")

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
	info, err := l.vector(ctx, fmt.Sprintf("max by (instance, gpu, uuid, energy_source, energy_scope) (last_over_time(%s{%s}[%s]))", contract.GPUInfo, gpuSel.sel, sp.rng), sp.evalAt)
	if err != nil {
		return nil, nil, err
	}
	source, scope = map[gpuKey]string{}, map[gpuKey]string{}
	for _, s := range info {
		source[keyOf(s.Metric)] = string(s.Metric["energy_source"])
		scope[keyOf(s.Metric)] = string(s.Metric["energy_scope"])
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

// anyOf is a quoted PromQL regexp matching exactly the given values.
func anyOf(vals []string) string {
	alts := make([]string, len(vals))
	for i, v := range vals {
		alts[i] = regexp.QuoteMeta(v)
	}
	return strconv.Quote(strings.Join(alts, "|"))
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

// reqSeries is one request series (labels without __name__) within one
// window across the five metrics; each list is time ordered, as Prometheus
// returns it.
type reqSeries struct {
	metric model.Metric
	v      [nReqMetrics][]model.SamplePair
}

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
// what follows from the rest (send = end − latency, first token = send +
// TTFT, computed by the same operations when copied): the per-window parts
// hold these (48 bytes instead of 96) until loadRequests copies them into
// RunData.Requests, which both live at that moment.
type reqVals struct {
	end, ttft, latency        float64
	outputTokens, inputTokens int64
	hasTTFT, success          bool
}

// loadRequests joins the per-request samples that share their labels (all
// but __name__) and timestamp into requests. The five metrics are read
// window by window; the samples of one request share a timestamp, so they
// fall in the same window, where they are joined by a merge over the five
// sorted sample lists of each series (O(samples), no per-request map) and
// the window's matrices are dropped. d.Requests lists the series in label
// order (as Prometheus 3 sorts a matrix), each series' requests in time
// order, whatever the windows.
func (l *loader) loadRequests(ctx context.Context, d *RunData, ws []window) error {
	// Each series' requests, window by window: copied once, at the end.
	type acc struct {
		metric model.Metric
		parts  [][]reqVals
	}
	series := map[model.Fingerprint]*acc{}
	total := 0
	err := inOrder(ctx, len(ws), l.par, func(ctx context.Context, i int) (reqPart, error) {
		return l.requestWindow(ctx, ws[i])
	}, func(_ int, p reqPart) error {
		d.IncompleteRequests += p.incomplete
		for _, sp := range p.series {
			a, ok := series[sp.fp]
			if !ok {
				a = &acc{metric: sp.metric}
				series[sp.fp] = a
			}
			a.parts = append(a.parts, sp.reqs)
			total += len(sp.reqs)
		}
		return nil
	})
	if err != nil {
		return err
	}
	all := make([]*acc, 0, len(series))
	for _, a := range series {
		all = append(all, a)
	}
	sortByLabels(all, func(a *acc) model.Metric { return a.metric })
	d.Requests = make([]Request, 0, total)
	for _, a := range all {
		formal, slot := a.metric["phase"] == "formal", string(a.metric["slot"])
		for k, p := range a.parts {
			for _, v := range p {
				r := Request{
					Formal: formal, Slot: slot,
					Send: v.end - v.latency, End: v.end, HasTTFT: v.hasTTFT,
					Latency: v.latency, OutputTokens: v.outputTokens, InputTokens: v.inputTokens, Success: v.success,
				}
				if v.hasTTFT {
					r.TTFT, r.FirstToken = v.ttft, r.Send+v.ttft
				}
				d.Requests = append(d.Requests, r)
			}
			a.parts[k] = nil
		}
	}
	return nil
}

// requestWindow reads the five per-request metrics over one window and joins
// them into requests.
func (l *loader) requestWindow(ctx context.Context, w window) (reqPart, error) {
	series := map[model.Fingerprint]*reqSeries{}
	var order []model.Fingerprint
	for m, name := range reqMetrics {
		err := l.rangeEach(ctx, fmt.Sprintf("%s{%s}", name, l.runSel()), w, func(ls model.Metric, vals []model.SamplePair, reused bool) {
			delete(ls, model.MetricNameLabel)
			fp := ls.Fingerprint()
			rs, ok := series[fp]
			if !ok {
				rs = &reqSeries{metric: ls}
				series[fp] = rs
				order = append(order, fp)
			}
			for len(vals) > 0 && !w.keep(vals[0].Timestamp) {
				vals = vals[1:]
			}
			if reused {
				vals = slices.Clone(vals) // only what the window keeps
			}
			rs.v[m] = vals
		})
		if err != nil {
			return reqPart{}, err
		}
	}
	var p reqPart
	for _, fp := range order {
		rs := series[fp]
		reqs := make([]reqVals, 0, len(rs.v[rLat]))
		var pos [nReqMetrics]int
		for {
			// The next timestamp of any metric.
			ts, any := model.Time(math.MaxInt64), false
			for m := range nReqMetrics {
				if pos[m] < len(rs.v[m]) {
					ts, any = min(ts, rs.v[m][pos[m]].Timestamp), true
				}
			}
			if !any {
				break
			}
			var val [nReqMetrics]float64
			var has [nReqMetrics]bool
			for m := range nReqMetrics {
				if pos[m] < len(rs.v[m]) && rs.v[m][pos[m]].Timestamp == ts {
					val[m], has[m] = float64(rs.v[m][pos[m]].Value), true
					pos[m]++
				}
			}
			r, ok := joinRequest(val, has)
			if !ok {
				p.incomplete++
				continue
			}
			r.end = float64(ts) / 1000
			reqs = append(reqs, r)
		}
		if len(reqs) > 0 {
			p.series = append(p.series, reqSeriesPart{fp: fp, metric: rs.metric, reqs: reqs})
		}
	}
	return p, nil
}

// joinRequest is one request from its samples; false when one it needs is
// absent or impossible (a NaN success, a negative or fractional token
// count, a NaN latency): the group counts as incomplete.
func joinRequest(val [nReqMetrics]float64, has [nReqMetrics]bool) (reqVals, bool) {
	if !has[rOut] || !has[rLat] || !has[rSucc] || !plausibleDuration(val[rLat]) {
		return reqVals{}, false
	}
	out, okOut := tokenCount(val[rOut])
	in, okIn := tokenCount(val[rIn]) // 0 when absent
	succ, okSucc := successValue(val[rSucc])
	if !okOut || !okIn || !okSucc {
		return reqVals{}, false
	}
	r := reqVals{latency: val[rLat], outputTokens: out, inputTokens: in, success: succ}
	if t := val[rTTFT]; has[rTTFT] && plausibleDuration(t) {
		r.hasTTFT, r.ttft = true, t
	}
	return r, true
}

// load reads the run's data from Prometheus; arch, when set, is the run's
// bench archive, whose phases.json fills in what Prometheus lacks.
func load(ctx context.Context, cfg Config, prom v1.API, arch *BenchArchive) (*RunData, error) {
	l := &loader{api: prom, runID: cfg.RunID, lookback: cfg.Lookback, now: cfg.Now, timeout: cfg.QueryTimeout, engineSel: cfg.EngineSelector,
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
	if cfg.ReadAPI != remoteread.Query {
		var err error
		if l.rr, err = remoteread.New(cfg.PrometheusURL, cfg.HTTP, cfg.QueryTimeout); err != nil {
			return nil, err
		}
	}
	d, err := l.load(ctx)
	if err != nil {
		return nil, fmt.Errorf("loading run %q from %s: %w", cfg.RunID, secretfile.RedactURL(cfg.PrometheusURL), secretfile.SecretsOf(cfg.PrometheusURL).Error(err))
	}
	return d, nil
}
