package analyze

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	"github.com/prometheus/common/config"

	"github.com/joulemark/joulemark/internal/contract"
	"github.com/joulemark/joulemark/internal/remoteread"
	"github.com/joulemark/joulemark/internal/secretfile"
	"github.com/joulemark/joulemark/report"
)

// DefaultLookback is how far back a run is looked for.
const DefaultLookback = 7 * 24 * time.Hour

// Config is one analysis: where the data is, which run, the definitions'
// parameters and where the report goes.
type Config struct {
	PrometheusURL string
	// HTTP carries auth (bearer, basic), TLS and extra headers such as
	// X-Scope-OrgID; the zero value is plain HTTP.
	HTTP     config.HTTPClientConfig
	RunID    string
	Params   Params        // DefaultParams() when zero
	Lookback time.Duration // DefaultLookback when 0
	// Now is when the run is looked for (now when zero). The report does not
	// depend on it as long as the run lies within Lookback before it.
	Now time.Time
	// QueryTimeout bounds each query (none when 0).
	QueryTimeout time.Duration
	// MaxSamples is the server's per-query sample limit: a raw read through
	// the query API that would load more is split in time
	// (internal/querysplit); 0: never split.
	MaxSamples int64
	// OutDir, when set, receives report.json, report.md and report.html
	// (see WriteReport).
	OutDir string
	// KeepEarlier: OutDir is the run's default report directory, so an
	// earlier report there (a re-analysis) is kept as OutDir.N and the new
	// one takes its place (report.WriteKeeping) instead of failing.
	KeepEarlier bool
	// Scenario is copied into the report.
	Scenario string
	// EngineSelector is a PromQL label matcher picking the run's engine
	// series (e.g. job="vllm"); empty: model_name of the run identity.
	EngineSelector string
	// Archive, when set, is the bench job's run archive (runs/<run_id>, the
	// directory holding requests.jsonl): the report then gains
	// output_sanity and, above Params.MaxBadOutputRatio, the
	// outputs_suspect flag.
	Archive string
	// RunsDir, when set and Archive is not, is searched for the run's
	// archive, RunsDir/<run_id>; a run without one there is analyzed
	// without output_sanity.
	RunsDir string
	// ReadAPI is how the raw series are read: remoteread.Auto (remote
	// read, falling back to the query API where the server does not offer
	// it; the default when empty), remoteread.Remote or remoteread.Query.
	// Both give the same report.
	ReadAPI string
	// Logger says how the raw series were read (a fallback from remote
	// read, and why); nil: nothing logged.
	Logger *slog.Logger
	// Wait bounds how long the run's final samples are waited for when
	// Prometheus does not hold its end yet (analyze run right after bench);
	// 0: not at all. What the bench archived fills in meanwhile.
	Wait time.Duration
	// Cost, when any input is set, adds the report's cost section.
	Cost report.CostInputs

	// maxResponse, in tests, lowers MaxPrometheusResponse.
	maxResponse int64
}

// withDefaults fills what the zero value leaves open.
func (c Config) withDefaults() Config {
	if c.Params == (Params{}) {
		c.Params = DefaultParams()
	}
	if c.Lookback == 0 {
		c.Lookback = DefaultLookback
	}
	return c
}

// Validate checks the configuration (with its defaults) before any work
// starts.
func (c *Config) Validate() error {
	d := c.withDefaults()
	c = &d
	if c.PrometheusURL == "" {
		return errors.New("the Prometheus URL is required")
	}
	if err := CheckPrometheusURL(c.PrometheusURL); err != nil {
		return fmt.Errorf("prometheus URL: %w", err)
	}
	if c.RunID == "" {
		return errors.New("the run id is required")
	}
	if err := contract.ValidateRunID(c.RunID); err != nil {
		return err
	}
	if c.Wait < 0 {
		return fmt.Errorf("wait must not be negative, got %s", c.Wait)
	}
	if c.Lookback < 0 {
		return fmt.Errorf("lookback must not be negative, got %s", c.Lookback)
	}
	if err := c.HTTP.Validate(); err != nil {
		return fmt.Errorf("prometheus HTTP client config: %w", err)
	}
	if err := remoteread.ValidMode(c.ReadAPI); err != nil {
		return err
	}
	if c.MaxSamples < 0 {
		return fmt.Errorf("max samples must not be negative, got %d", c.MaxSamples)
	}
	if err := c.Cost.Validate(); err != nil {
		return err
	}
	return c.Params.Validate()
}

// Analyze reads the run once (Prometheus, the bench archive, the carbon
// intensity) and computes its whole report and plot data.
func Analyze(ctx context.Context, cfg Config) (*report.Report, *PlotData, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, nil, err
	}
	in, err := read(ctx, cfg)
	if err != nil {
		return nil, nil, err
	}
	r, pd, err := Compute(in, cfg.Params, cfg.Cost)
	if err != nil {
		return nil, nil, fmt.Errorf("analyzing run %q: %w", cfg.RunID, err)
	}
	return r, pd, nil
}

// Run analyzes the run and, when cfg.OutDir is set, writes the report there.
func Run(ctx context.Context, cfg Config) (*report.Report, error) {
	if cfg.OutDir != "" && !cfg.KeepEarlier {
		// Fail before any query when the report could not be written.
		if err := report.CheckFree(filepath.Clean(cfg.OutDir)); err != nil {
			return nil, err
		}
	}
	r, pd, err := Analyze(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if cfg.OutDir == "" {
		return r, nil
	}
	kept, err := writeReport(cfg.OutDir, cfg.KeepEarlier, r, pd)
	if err != nil {
		return r, err
	}
	if kept != "" && cfg.Logger != nil {
		cfg.Logger.Info("the earlier report of the run is kept beside the new one", "earlier", kept, "new", cfg.OutDir)
	}
	return r, nil
}

// CheckPrometheusURL checks a Prometheus base URL and recognises the
// near-misses people paste (an API or UI path, no scheme), naming the URL
// they meant.
func CheckPrometheusURL(raw string) error {
	err := checkPrometheusURL(raw)
	return secretfile.SecretsOf(raw).Error(err)
}

func checkPrometheusURL(raw string) error {
	u, err := url.Parse(raw)
	shown := secretfile.RedactURL(raw)
	if err == nil && u.Host == "" && raw != "" && !strings.HasPrefix(raw, "/") && (u.Scheme == "" || u.Opaque != "") {
		return fmt.Errorf("%q has no scheme: did you mean http://%s?", shown, shown)
	}
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%q: want http(s)://host[:port][/path]", shown)
	}
	for _, tail := range []string{"/api/v1", "/graph", "/federate"} {
		if i := strings.Index(u.Path, tail); i >= 0 && (len(u.Path) == i+len(tail) || u.Path[i+len(tail)] == '/') {
			base := *u
			base.Path, base.RawQuery, base.Fragment = u.Path[:i], "", ""
			return fmt.Errorf("%q ends in an API or UI path (%s): give the base URL Prometheus serves under, e.g. %s", shown, u.Path[i:], secretfile.RedactURL(base.String()))
		}
	}
	return nil
}
