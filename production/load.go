package production

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/config"
	"github.com/prometheus/common/model"

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
	d, err := load(ctx, v1.NewAPI(client), rr, cfg)
	if err != nil {
		return nil, err
	}
	r := Compute(d, cfg.Namespace, cfg.Model)
	carbon := cfg.Cost.CarbonIntensity
	if cfg.Cost.CarbonQuery != "" {
		if carbon, err = promquery.AverageOver(ctx, v1.NewAPI(client), cfg.Cost.CarbonQuery, d.From, d.To); err != nil {
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

// load is Load reading through remote read where rr is not nil (with
// cfg.ReadAPI auto, a first failing remote read turns to the query API for
// every series; Data.ReadAPI says which was used).
func load(ctx context.Context, a v1.API, rr *remoteread.Reader, cfg Config) (*Data, error) {
	if cfg.Margin <= 0 {
		cfg.Margin = 5 * time.Minute
	}
	if cfg.QueryTimeout <= 0 {
		cfg.QueryTimeout = 2 * time.Minute
	}
	d := &Data{From: unixSec(cfg.From), To: unixSec(cfg.To)}
	ns := ""
	if cfg.Namespace != "" {
		ns = "namespace=" + strconv.Quote(cfg.Namespace)
	}
	// The bench's startup phases (a bench-started engine is a start).
	startup := contract.LabelPhase + `=~"` + string(contract.Startup) + "|" + string(contract.Warmup) + `"`
	rd := &reader{a: a, rr: rr, cfg: cfg, d: d}
	for _, q := range []struct {
		name string
		sel  string
		into *[]Series
	}{
		{contract.PodEnergy, ns, &d.PodEnergy},
		{contract.GPUAllocationInfo, ns, &d.Allocations},
		{mVLLMTokens, ns, &d.Tokens},
		{mSGLTokens, ns, &d.Tokens},
		{contract.UnallocatedEnergy, "", &d.Unallocated},
		{contract.GPUInfo, `energy_scope="module"`, &d.ModuleGPUs},
		{contract.PhaseStart, startup, &d.PhaseStarts},
		{contract.PhaseEnd, startup, &d.PhaseEnds},
		{contract.PhaseEnergy, startup, &d.PhaseEnergy},
		{contract.RunInfo, "", &d.RunInfo},
	} {
		m, err := rd.read(ctx, q.name, q.sel)
		if err != nil {
			return nil, err
		}
		*q.into = append(*q.into, d.inRange(m)...)
	}
	if len(d.PodEnergy) == 0 {
		return nil, fmt.Errorf("no %s in Prometheus between %s and %s (does the exporter read the kubelet's PodResources socket? is it scraped with honor_labels?)",
			contract.PodEnergy, cfg.From.UTC().Format(time.RFC3339), cfg.To.UTC().Format(time.RFC3339))
	}
	return d, nil
}

// reader reads one metric's raw samples over the range, through remote
// read while it answers (rr), else through the query API.
type reader struct {
	a   v1.API
	rr  *remoteread.Reader
	cfg Config
	d   *Data
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
