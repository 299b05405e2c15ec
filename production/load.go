package production

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/config"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"golang.org/x/sync/errgroup"

	"github.com/joulemark/joulemark/internal/contract"
	"github.com/joulemark/joulemark/internal/promquery"
	"github.com/joulemark/joulemark/internal/querysplit"
	"github.com/joulemark/joulemark/internal/remoteread"
	"github.com/joulemark/joulemark/internal/secretfile"
	"github.com/joulemark/joulemark/report"
)

// Metric names read (docs/design.md, docs/exporter.md "Energy per pod"):
// the engines' output token counters, vLLM's then SGLang's.
var (
	mVLLMTokens = contract.EngineName(contract.EngineVLLM, contract.RoleGenerationTokens)
	mSGLTokens  = contract.EngineName(contract.EngineSGLang, contract.RoleGenerationTokens)
)

// Config says what to analyze and where to write it.
type Config struct {
	PrometheusURL string
	HTTP          config.HTTPClientConfig
	From, To      time.Time
	// Namespace and Model filter the pods (empty: all).
	Namespace, Model string
	// OutDir receives report.json, report.md and report.html; empty: no
	// files.
	OutDir string
	// QueryTimeout bounds each query (default 2m).
	QueryTimeout time.Duration
	// MaxSamples is the server's per-query sample limit: a read through
	// the query API that would load more is split in time
	// (internal/querysplit); 0: never split.
	MaxSamples int64
	// Margin is read before From to place the counters at From exactly
	// (default 5m).
	Margin time.Duration
	// ReadAPI is how the series are read: remoteread.Auto (remote read,
	// falling back to the query API where the server does not offer it;
	// the default when empty), remoteread.Remote or remoteread.Query. Both
	// give the same report.
	ReadAPI string
	// Logger says how the series were read (a fallback from remote read,
	// and why); nil: nothing logged.
	Logger *slog.Logger
	// Cost, when any input is set, prices each model's and namespace's
	// energy (Report.Cost).
	Cost report.CostInputs
	// OnRead, when set, is told each read's selector and samples (the
	// fleet benchmark's largest read).
	OnRead func(selector string, samples int)
	// batchSamples overrides the const for tests (0: batchSamples).
	batchSamples int
}

// Validate checks the configuration before any query.
func (c Config) Validate() error {
	var errs []error
	if u, err := url.Parse(c.PrometheusURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		errs = append(errs, fmt.Errorf("prometheus URL %q: want http(s)://host[:port]", secretfile.RedactURL(c.PrometheusURL)))
	}
	if err := remoteread.ValidMode(c.ReadAPI); err != nil {
		errs = append(errs, err)
	}
	if c.MaxSamples < 0 {
		errs = append(errs, fmt.Errorf("max samples must not be negative, got %d", c.MaxSamples))
	}
	if !c.To.After(c.From) {
		errs = append(errs, fmt.Errorf("range %s to %s: the end must be after the start", c.From.UTC().Format(time.RFC3339), c.To.UTC().Format(time.RFC3339)))
	}
	if err := c.HTTP.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("prometheus HTTP client config: %w", err))
	}
	if err := c.Cost.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Run reads the range from Prometheus, computes the report and, with
// OutDir, writes it.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	hc, err := config.NewClientFromConfig(cfg.HTTP, "joulemark-analyze-production")
	if err != nil {
		return nil, fmt.Errorf("prometheus HTTP client: %w", err)
	}
	client, err := api.NewClient(api.Config{Address: cfg.PrometheusURL, Client: hc})
	if err != nil {
		return nil, fmt.Errorf("prometheus client for %s: %w", secretfile.RedactURL(cfg.PrometheusURL), err)
	}
	var rr *remoteread.Reader
	if cfg.ReadAPI != remoteread.Query {
		if rr, err = remoteread.New(cfg.PrometheusURL, cfg.HTTP, cfg.QueryTimeout); err != nil {
			return nil, err
		}
	}
	r, err := load(ctx, v1.NewAPI(client), rr, cfg)
	if err != nil {
		return nil, err
	}
	carbon := cfg.Cost.CarbonIntensity
	if cfg.Cost.CarbonQuery != "" {
		if carbon, err = promquery.AverageOver(ctx, v1.NewAPI(client), cfg.Cost.CarbonQuery, r.From, r.To); err != nil {
			return nil, err
		}
	}
	AddCost(r, cfg.Cost, carbon)
	if cfg.OutDir != "" {
		if err := Write(cfg.OutDir, r); err != nil {
			return r, err
		}
	}
	return r, nil
}

// readAfter is how far past To the series are read for their first sample
// after To (several scrape intervals).
const readAfter = 30 * time.Second

// batchSamples is how many samples one read (a remote-read request or a
// query) is sized to load: it bounds the analysis' memory, and keeps each
// read far under a server's per-query limit (Prometheus'
// --query.max-samples and --storage.remote.read-sample-limit, 50M by
// default), or under Config.MaxSamples when lower (byLabel sizes the
// batches).
const batchSamples = 2_000_000

// load reads the range and folds it into the report, pods in batches of
// whole pods (namespace by namespace, pod names in order), so that no more
// than a batch's raw samples are held at once. It reads through remote
// read where rr is not nil (with cfg.ReadAPI auto, a first failing remote
// read turns to the query API for every series).
func load(ctx context.Context, a v1.API, rr *remoteread.Reader, cfg Config) (*Report, error) {
	if cfg.Margin <= 0 {
		cfg.Margin = 5 * time.Minute
	}
	if cfg.QueryTimeout <= 0 {
		cfg.QueryTimeout = 2 * time.Minute
	}
	if cfg.batchSamples <= 0 {
		cfg.batchSamples = batchSamples
		if cfg.MaxSamples > 0 {
			cfg.batchSamples = int(min(cfg.MaxSamples, batchSamples))
		}
	}
	d := &Data{From: unixSec(cfg.From), To: unixSec(cfg.To)}
	rd := &reader{a: a, rr: rr, cfg: cfg, d: d, maxSeries: map[string]int{}}
	// The bench's startup phases (a bench-started engine is a start).
	startup := contract.LabelPhase + `=~"` + string(contract.Startup) + "|" + string(contract.Warmup) + `"`
	for _, q := range []struct {
		name, sel string
		into      *[]Series
	}{
		{contract.GPUInfo, `energy_scope="module"`, &d.ModuleGPUs},
		{contract.PhaseStart, startup, &d.PhaseStarts},
		{contract.PhaseEnd, startup, &d.PhaseEnds},
		{contract.PhaseEnergy, startup, &d.PhaseEnergy},
		{contract.RunInfo, "", &d.RunInfo},
	} {
		err := rd.byLabel(ctx, []string{q.name}, []string{q.sel}, "instance", func() batch {
			return &seriesBatch{d: d, into: q.into}
		})
		if err != nil {
			return nil, err
		}
		// in the order of one read's series (the phase energy is a sum)
		slices.SortStableFunc(*q.into, func(x, y Series) int {
			return labels.Compare(labels.FromMap(x.Labels), labels.FromMap(y.Labels))
		})
	}
	f := newFold(d, cfg.Namespace, cfg.Model)
	d.ModuleGPUs, d.PhaseStarts, d.PhaseEnds, d.PhaseEnergy, d.RunInfo = nil, nil, nil, nil, nil
	pods, err := rd.pods(ctx, f)
	if err != nil {
		return nil, err
	}
	if pods == 0 {
		return nil, fmt.Errorf("no %s in Prometheus between %s and %s (does the exporter read the kubelet's PodResources socket? is it scraped with honor_labels?)",
			contract.PodEnergy, cfg.From.UTC().Format(time.RFC3339), cfg.To.UTC().Format(time.RFC3339))
	}
	var unallocated []energy
	err = rd.byLabel(ctx, []string{contract.UnallocatedEnergy}, []string{""}, "instance", func() batch {
		return &energyBatch{d: d, into: &unallocated}
	})
	if err != nil {
		return nil, err
	}
	// in the order of one read's series: by labels
	slices.SortFunc(unallocated, func(x, y energy) int { return labels.Compare(x.labels, y.labels) })
	for _, e := range unallocated {
		f.unallocated = append(f.unallocated, e.joules)
	}
	return f.finish(), nil
}

// batch takes one batch's series as they are decoded: add is given each
// series of the batch's kth name, in the order of its read (pairs is
// reused once add returns), from the goroutine reading the batch; done is
// called after the batch was read, batches in order, one at a time.
type batch interface {
	add(k int, m model.Metric, pairs []model.SamplePair)
	done()
}

// seriesBatch appends its series to into.
type seriesBatch struct {
	d    *Data
	into *[]Series
	got  []Series
}

func (b *seriesBatch) add(_ int, m model.Metric, pairs []model.SamplePair) {
	if pairs = b.d.clip(pairs); len(pairs) > 0 {
		b.got = append(b.got, Series{Labels: labelMap(m), Samples: toSamples(pairs)})
	}
}

func (b *seriesBatch) done() { *b.into = append(*b.into, b.got...) }

// energy is a counter series' increase over the range.
type energy struct {
	labels labels.Labels
	joules float64
}

// energyBatch appends its counters' increases over the range to into.
type energyBatch struct {
	d    *Data
	into *[]energy
	got  []energy
}

func (b *energyBatch) add(_ int, m model.Metric, pairs []model.SamplePair) {
	if pairs = b.d.clip(pairs); len(pairs) > 0 {
		b.got = append(b.got, energy{labels.FromMap(labelMap(m)), counterDelta(pairs, b.d.From, b.d.To)})
	}
}

func (b *energyBatch) done() { *b.into = append(*b.into, b.got...) }

// podNames is what pods reads, in order: the pods' energy, allocations and
// tokens (vLLM's, then SGLang's).
var podNames = []string{contract.PodEnergy, contract.GPUAllocationInfo, mVLLMTokens, mSGLTokens}

// podBatch decodes a batch of whole pods straight into their counters and
// allocation times; done folds them into f.
type podBatch struct {
	d    *Data
	f    *fold
	pods podSet
	n    *int // pods with energy in the range
}

func (b *podBatch) add(k int, m model.Metric, pairs []model.SamplePair) {
	if pairs = b.d.clip(pairs); len(pairs) == 0 {
		return
	}
	p := b.pods.get(string(m["namespace"]), string(m["pod"]))
	switch podNames[k] {
	case contract.PodEnergy:
		p.energy.add(counterOf(pairs))
	case contract.GPUAllocationInfo:
		times := make([]float64, len(pairs))
		for i, x := range pairs {
			times[i] = unixSecOf(x.Timestamp)
		}
		p.addAllocation(gpuKey(string(m["instance"]), string(m[contract.LabelUUID])), times)
	default:
		p.addTokens(string(m["model_name"]), counterOf(pairs))
	}
}

func (b *podBatch) done() {
	for _, p := range b.pods {
		if len(p.energy) > 0 {
			*b.n++
		}
	}
	b.f.addPods(b.pods)
}

// pods reads the pods' series (energy, allocations, tokens) in batches of
// whole pods and folds each batch into f; it returns how many pods had
// energy in the range.
func (rd *reader) pods(ctx context.Context, f *fold) (int, error) {
	namespaces := []string{rd.cfg.Namespace}
	if namespaces[0] == "" {
		ns, err := rd.values(ctx, podNames, "", "namespace")
		if err != nil {
			return 0, err
		}
		namespaces = append(namespaces, ns...)
	}
	sels := make([]string, len(namespaces))
	for i, ns := range namespaces {
		sels[i] = "namespace=" + strconv.Quote(ns)
	}
	n := 0
	err := rd.byLabel(ctx, podNames, sels, "pod", func() batch {
		return &podBatch{d: rd.d, f: f, pods: podSet{}, n: &n}
	})
	return n, err
}

// values is the values of label on the series of names{sel} in the range,
// in order, the empty value (series without the label) first.
func (rd *reader) values(ctx context.Context, names []string, sel, label string) ([]string, error) {
	from, to := rd.cfg.From.Add(-rd.cfg.Margin), rd.cfg.To.Add(readAfter)
	matches := make([]string, len(names))
	for i, name := range names {
		matches[i] = name + "{" + sel + "}"
	}
	vs, _, _, err := rd.a.LabelValues(ctx, label, matches, from, to, v1.WithTimeout(rd.cfg.QueryTimeout))
	if err != nil {
		return nil, fmt.Errorf("%s values of %v: %w", label, matches, err)
	}
	out := []string{""}
	for _, v := range vs {
		if v != "" {
			out = append(out, string(v))
		}
	}
	slices.Sort(out[1:])
	return slices.Compact(out), nil
}

// readsInFlight bounds the batches byLabel reads at once (each up to
// cfg.batchSamples a name): the server encodes the next while this
// process decodes one and folds another.
const readsInFlight = 3

// byLabel reads names{sel} for each of sels, in order, in batches of
// label values (each name's series of a batch in one read), each batch
// into a newBatch, up to readsInFlight batches at once, their done called
// in order. A batch takes values while each name's read stays within
// cfg.batchSamples: its series (listed first) times the most samples a
// series of that name has had (one a second over the span before the
// first read; until then the batches are read one by one).
func (rd *reader) byLabel(ctx context.Context, names, sels []string, label string, newBatch func() batch) error {
	var planned []string // the selectors of the batches not read yet
	for _, sel := range sels {
		counts, values, err := rd.census(ctx, names, sel, label)
		if err != nil {
			return err
		}
		if sel != "" {
			sel += ","
		}
		for len(values) > 0 {
			groups := rd.plan(names, counts, values)
			sized := rd.sized(names, counts)
			if !sized {
				groups = groups[:1]
			}
			for _, g := range groups {
				alts := make([]string, len(g))
				for j, v := range g {
					alts[j] = regexp.QuoteMeta(v)
				}
				planned = append(planned, sel+label+"=~"+strconv.Quote(strings.Join(alts, "|")))
				values = values[len(g):]
			}
			if !sized {
				if err := rd.readBatches(ctx, names, planned, newBatch); err != nil {
					return err
				}
				planned = nil
			}
		}
	}
	return rd.readBatches(ctx, names, planned, newBatch)
}

// census is how many series of each name{sel} there are by their label's
// value in the range, and the values in order.
func (rd *reader) census(ctx context.Context, names []string, sel, label string) ([]map[string]int, []string, error) {
	counts := make([]map[string]int, len(names))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(readsInFlight)
	for k, name := range names {
		g.Go(func() (err error) {
			counts[k], err = rd.series(gctx, name, sel, label)
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, nil, err
	}
	var values []string
	for _, c := range counts {
		values = append(values, slices.Collect(maps.Keys(c))...)
	}
	slices.Sort(values)
	return counts, slices.Compact(values), nil
}

// plan splits values, in order, into batches within cfg.batchSamples a
// name (a batch holds one value at least).
func (rd *reader) plan(names []string, counts []map[string]int, values []string) [][]string {
	var groups [][]string
	for i := 0; i < len(values); {
		n, load := 0, make([]int, len(names))
		for ; i+n < len(values); n++ {
			fits := true
			for k, name := range names {
				fits = fits && (n == 0 || load[k]+counts[k][values[i+n]]*rd.perSeries(name) <= rd.cfg.batchSamples)
			}
			if !fits {
				break
			}
			for k, name := range names {
				load[k] += counts[k][values[i+n]] * rd.perSeries(name)
			}
		}
		groups = append(groups, values[i:i+n])
		i += n
	}
	return groups
}

// sized tells whether every name with series has been read, its series'
// samples known.
func (rd *reader) sized(names []string, counts []map[string]int) bool {
	for k, name := range names {
		if _, ok := rd.maxSeries[name]; !ok && len(counts[k]) > 0 {
			return false
		}
	}
	return true
}

// readStat is one read's series and samples, and its longest series'.
type readStat struct{ series, samples, longest int }

// readBatches reads the batches of sels (each name's series of a batch in
// one read, the names in order), up to readsInFlight at once, and calls
// their done in order.
func (rd *reader) readBatches(ctx context.Context, names, sels []string, newBatch func() batch) error {
	type job struct {
		b     batch
		stats []readStat
		ready chan struct{}
	}
	jobs := make([]*job, len(sels))
	for i := range jobs {
		jobs[i] = &job{b: newBatch(), ready: make(chan struct{})}
	}
	g, gctx := errgroup.WithContext(ctx)
	slots := make(chan struct{}, readsInFlight)
	g.Go(func() error {
		for i, j := range jobs {
			select {
			case slots <- struct{}{}:
			case <-gctx.Done():
				return nil
			}
			g.Go(func() error {
				for k, name := range names {
					st, err := rd.each(gctx, name, sels[i], func(m model.Metric, pairs []model.SamplePair) { j.b.add(k, m, pairs) })
					if err != nil {
						return err
					}
					j.stats = append(j.stats, st)
				}
				close(j.ready)
				return nil
			})
		}
		return nil
	})
	for i, j := range jobs {
		select {
		case <-j.ready:
		case <-gctx.Done():
			if err := g.Wait(); err != nil {
				return err
			}
			return ctx.Err()
		}
		for k, st := range j.stats {
			if st.series > 0 {
				rd.maxSeries[names[k]] = max(rd.maxSeries[names[k]], st.longest)
			}
			if rd.cfg.OnRead != nil {
				rd.cfg.OnRead(names[k]+"{"+sels[i]+"}", st.samples)
			}
		}
		j.b.done()
		jobs[i] = nil
		<-slots
	}
	return g.Wait()
}

// perSeries is the most samples a series of name has had, or one a second
// over the span before any was read.
func (rd *reader) perSeries(name string) int {
	if n, ok := rd.maxSeries[name]; ok {
		return max(n, 1)
	}
	return int(rd.cfg.To.Add(readAfter).Sub(rd.cfg.From.Add(-rd.cfg.Margin)).Seconds()) + 1
}

// series counts the series of name{sel} in the range by their label's
// value (empty: without it).
func (rd *reader) series(ctx context.Context, name, sel, label string) (map[string]int, error) {
	from, to := rd.cfg.From.Add(-rd.cfg.Margin), rd.cfg.To.Add(readAfter)
	match := name + "{" + sel + "}"
	ls, _, _, err := rd.a.Series(ctx, []string{match}, from, to, v1.WithTimeout(rd.cfg.QueryTimeout))
	if err != nil {
		return nil, fmt.Errorf("series of %s: %w", match, err)
	}
	out := map[string]int{}
	for _, l := range ls {
		out[string(l[model.LabelName(label)])]++
	}
	return out, nil
}

// reader reads one metric's raw samples over the range, through remote
// read while it answers (rr), else through the query API.
type reader struct {
	a   v1.API
	cfg Config
	d   *Data
	// maxSeries is the most samples a series of each metric had (absent:
	// not read yet): the batches' sizes.
	maxSeries map[string]int
	// mu guards rr, remoteOK (a remote read succeeded), d.ReadAPI and
	// d.ReadFallback: reads run at once.
	mu       sync.Mutex
	rr       *remoteread.Reader
	remoteOK bool
}

// each hands f the series of name{sel}, as they are decoded (pairs reused
// once f returns), with their samples from the margin before From to
// readAfter past To. A counter's value at To is interpolated between the
// samples around it: the read goes past To (at(To) took the last sample
// before To, missing up to a scrape interval of energy).
func (rd *reader) each(ctx context.Context, name, sel string, f func(model.Metric, []model.SamplePair)) (readStat, error) {
	cfg := rd.cfg
	readEnd := cfg.To.Add(readAfter)
	spanMs := max(readEnd.Sub(cfg.From.Add(-cfg.Margin)).Milliseconds(), 1)
	end := readEnd.UnixMilli()
	selector := name + "{" + sel + "}"
	if sel == "" {
		selector = name
	}
	var st readStat
	count := func(m model.Metric, pairs []model.SamplePair) error {
		st.series, st.samples, st.longest = st.series+1, st.samples+len(pairs), max(st.longest, len(pairs))
		f(m, pairs)
		return nil
	}
	if rr := rd.remote(); rr != nil {
		err := rr.Each(ctx, selector, end-spanMs, end, count)
		if err == nil {
			rd.mu.Lock()
			rd.remoteOK, rd.d.ReadAPI = true, remoteread.Remote
			rd.mu.Unlock()
			return st, nil
		}
		if st.series > 0 || cfg.ReadAPI == remoteread.Remote || ctx.Err() != nil || !rd.fallBack(err) {
			return st, err
		}
	}
	rd.mu.Lock()
	rd.d.ReadAPI = remoteread.Query
	rd.mu.Unlock()
	split := querysplit.Reader{API: rd.a, MaxSamples: cfg.MaxSamples, Timeout: cfg.QueryTimeout}
	m, err := split.Read(ctx, selector, end-spanMs, end)
	if err != nil {
		return st, err
	}
	for _, s := range m {
		_ = count(s.Metric, s.Values)
	}
	return st, nil
}

// remote is the remote reader while remote read is used (nil after a
// fallback or without one).
func (rd *reader) remote() *remoteread.Reader {
	rd.mu.Lock()
	defer rd.mu.Unlock()
	return rd.rr
}

// fallBack turns to the query API after remote read failed with err,
// unless a read through it succeeded before (then err is the read's).
func (rd *reader) fallBack(err error) bool {
	rd.mu.Lock()
	defer rd.mu.Unlock()
	switch {
	case rd.rr == nil: // another read fell back
		return true
	case rd.remoteOK:
		return false
	}
	rd.rr, rd.d.ReadFallback = nil, err.Error()
	if rd.cfg.Logger != nil {
		rd.cfg.Logger.Info("remote read unavailable: the series are read through the query API (same report, more CPU)", "err", err)
	}
	return true
}

// clip is the samples up to the series' first one past To (all the
// interpolation needs); none when it starts after To.
func (d *Data) clip(pairs []model.SamplePair) []model.SamplePair {
	i := sort.Search(len(pairs), func(i int) bool { return unixSecOf(pairs[i].Timestamp) > d.To })
	switch {
	case i == len(pairs):
		return pairs
	case i == 0:
		return nil
	}
	return pairs[:i+1]
}

// counterOf is newCounter of the samples.
func counterOf(pairs []model.SamplePair) counter {
	c := counter{t: make([]float64, len(pairs)), cum: make([]float64, len(pairs))}
	var acc, prev float64
	for i, p := range pairs {
		v := float64(p.Value)
		acc, prev = bridge(i == 0, acc, prev, v), v
		c.t[i], c.cum[i] = unixSecOf(p.Timestamp), acc
	}
	return c
}

// counterDelta is counterOf(pairs).delta(a, b), a ≤ b, in one pass
// without the counter's arrays: its value at a and at b, each linear
// between the samples around it, zero before the first sample, the last
// value after the last.
func counterDelta(pairs []model.SamplePair, a, b float64) float64 {
	var atA, atB, acc, prev, tPrev float64
	doneA, doneB := false, false
	for i, p := range pairs {
		v, t := float64(p.Value), unixSecOf(p.Timestamp)
		before := acc
		acc, prev = bridge(i == 0, acc, prev, v), v
		for _, x := range [2]struct {
			at   float64
			val  *float64
			done *bool
		}{{a, &atA, &doneA}, {b, &atB, &doneB}} {
			if *x.done || t < x.at {
				continue
			}
			// the first sample at or after x.at (counter.at's index i)
			*x.done = true
			if t == x.at || i == 0 {
				*x.val = acc
				if i == 0 && t > x.at {
					*x.val = 0 // before the first sample
				}
				continue
			}
			f := (x.at - tPrev) / (t - tPrev)
			*x.val = before + f*(acc-before)
		}
		tPrev = t
		if doneB {
			break
		}
	}
	if !doneA {
		atA = acc
	}
	if !doneB {
		atB = acc
	}
	return atB - atA
}

// toSamples copies pairs.
func toSamples(pairs []model.SamplePair) []Sample {
	out := make([]Sample, len(pairs))
	for i, p := range pairs {
		out[i] = Sample{T: unixSecOf(p.Timestamp), V: float64(p.Value)}
	}
	return out
}

// labelMap copies a series' labels.
func labelMap(m model.Metric) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[string(k)] = string(v)
	}
	return out
}

func unixSecOf(t model.Time) float64 { return float64(t) / 1000 }

func unixSec(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }
