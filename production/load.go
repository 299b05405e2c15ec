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
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/config"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"

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
		err := rd.byLabel(ctx, []string{q.name}, q.sel, "instance", func(_ string, m model.Matrix) {
			*q.into = append(*q.into, d.inRange(m)...)
		}, nil)
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
	type energy struct {
		labels labels.Labels
		joules float64
	}
	var unallocated []energy
	err = rd.byLabel(ctx, []string{contract.UnallocatedEnergy}, "", "instance", func(_ string, m model.Matrix) {
		for _, s := range d.inRange(m) {
			unallocated = append(unallocated, energy{labels.FromMap(s.Labels), newCounter(s.Samples).delta(d.From, d.To)})
		}
	}, nil)
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

// pods reads the pods' series (energy, allocations, tokens) in batches of
// whole pods and folds each batch into f; it returns how many pods had
// energy in the range.
func (rd *reader) pods(ctx context.Context, f *fold) (int, error) {
	names := []string{contract.PodEnergy, contract.GPUAllocationInfo, mVLLMTokens, mSGLTokens}
	namespaces := []string{rd.cfg.Namespace}
	if namespaces[0] == "" {
		ns, err := rd.values(ctx, names, "", "namespace")
		if err != nil {
			return 0, err
		}
		namespaces = append(namespaces, ns...)
	}
	n := 0
	for _, ns := range namespaces {
		sel := "namespace=" + strconv.Quote(ns)
		var b Data
		err := rd.byLabel(ctx, names, sel, "pod", func(name string, m model.Matrix) {
			into := map[string]*[]Series{contract.PodEnergy: &b.PodEnergy, contract.GPUAllocationInfo: &b.Allocations}[name]
			if into == nil {
				into = &b.Tokens
			}
			*into = append(*into, rd.d.inRange(m)...)
		}, func() {
			pods := gather(&b)
			for _, p := range pods {
				if len(p.energy) > 0 {
					n++
				}
			}
			f.addPods(pods)
			b = Data{}
		})
		if err != nil {
			return 0, err
		}
	}
	return n, nil
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

// byLabel reads names{sel} in batches of label values (each name's series
// of a batch in one read), calling each with every read and done after
// each batch. A batch takes values while each name's read stays within
// cfg.batchSamples: its series (listed first) times the most samples a
// series of that name has had (one a second over the span before the first
// read).
func (rd *reader) byLabel(ctx context.Context, names []string, sel, label string, each func(name string, m model.Matrix), done func()) error {
	counts := make([]map[string]int, len(names)) // series per value, per name
	var values []string
	for k, name := range names {
		c, err := rd.series(ctx, name, sel, label)
		if err != nil {
			return err
		}
		counts[k] = c
		values = append(values, slices.Collect(maps.Keys(c))...)
	}
	slices.Sort(values)
	values = slices.Compact(values)
	if sel != "" {
		sel += ","
	}
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
		alts := make([]string, n)
		for j, v := range values[i : i+n] {
			alts[j] = regexp.QuoteMeta(v)
		}
		bsel := sel + label + "=~" + strconv.Quote(strings.Join(alts, "|"))
		for _, name := range names {
			m, err := rd.read(ctx, name, bsel)
			if err != nil {
				return err
			}
			samples := 0
			for _, s := range m {
				samples += len(s.Values)
				rd.maxSeries[name] = max(rd.maxSeries[name], len(s.Values))
			}
			if rd.cfg.OnRead != nil {
				rd.cfg.OnRead(name+"{"+bsel+"}", samples)
			}
			each(name, m)
		}
		if done != nil {
			done()
		}
		i += n
	}
	return nil
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
	rr  *remoteread.Reader
	cfg Config
	d   *Data
	// maxSeries is the most samples a series of each metric had (absent:
	// not read yet): the batches' sizes.
	maxSeries map[string]int
}

// read returns name{sel}'s samples from the margin before From to
// readAfter past To. A counter's value at To is interpolated between the
// samples around it: the read goes past To (at(To) took the last sample
// before To, missing up to a scrape interval of energy).
func (rd *reader) read(ctx context.Context, name, sel string) (model.Matrix, error) {
	cfg, d := rd.cfg, rd.d
	readEnd := cfg.To.Add(readAfter)
	spanMs := max(readEnd.Sub(cfg.From.Add(-cfg.Margin)).Milliseconds(), 1)
	selector := name + "{" + sel + "}"
	if sel == "" {
		selector = name
	}
	if rd.rr != nil {
		end := readEnd.UnixMilli()
		m, err := rd.rr.Read(ctx, selector, end-spanMs, end)
		switch {
		case err == nil:
			d.ReadAPI = remoteread.Remote
			return m, nil
		case cfg.ReadAPI == remoteread.Remote || ctx.Err() != nil || d.ReadAPI == remoteread.Remote:
			return nil, err
		}
		rd.rr, d.ReadFallback = nil, err.Error()
		if cfg.Logger != nil {
			cfg.Logger.Info("remote read unavailable: the series are read through the query API (same report, more CPU)", "err", err)
		}
	}
	d.ReadAPI = remoteread.Query
	end := readEnd.UnixMilli()
	split := querysplit.Reader{API: rd.a, MaxSamples: cfg.MaxSamples, Timeout: cfg.QueryTimeout}
	return split.Read(ctx, selector, end-spanMs, end)
}

// inRange converts m, keeping each series' samples up to its first one
// past To (all the interpolation needs) and dropping a series starting
// after To.
func (d *Data) inRange(m model.Matrix) []Series {
	var out []Series
	for _, s := range m {
		ser := Series{Labels: map[string]string{}, Samples: make([]Sample, 0, len(s.Values))}
		for k, v := range s.Metric {
			ser.Labels[string(k)] = string(v)
		}
		for _, p := range s.Values {
			if n := len(ser.Samples); n > 0 && ser.Samples[n-1].T > d.To {
				break
			}
			ser.Samples = append(ser.Samples, Sample{T: float64(p.Timestamp) / 1000, V: float64(p.Value)})
		}
		if len(ser.Samples) > 0 && ser.Samples[0].T <= d.To {
			out = append(out, ser)
		}
	}
	return out
}

func unixSec(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }
