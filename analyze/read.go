package analyze

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math"
	"time"

	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/config"

	"github.com/joulemark/joulemark/internal/remoteread"
	"github.com/joulemark/joulemark/internal/runarchive"
	"github.com/joulemark/joulemark/internal/secretfile"
	"github.com/joulemark/joulemark/report"
)

// openArchive reads the run's bench archive (Config.Archive, else
// RunsDir/<run_id> when it exists) in one pass; nil when there is none to
// read. It fails when the archive is incomplete, malformed or holds
// another run: a wrong archive would put another run's outputs in the
// report.
func (c *Config) openArchive() (*benchArchive, error) {
	var run *runarchive.Run
	var err error
	switch {
	case c.Archive != "":
		run, err = runarchive.OpenDir(c.Archive)
	case c.RunsDir != "":
		run, err = runarchive.Open(c.RunsDir, c.RunID)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
	default:
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return readBenchArchive(run, c.RunID)
}

// load reads the run's data from Prometheus, cfg validated; arch, when
// set, is the run's bench archive, whose phases.json fills in what
// Prometheus lacks.
func load(ctx context.Context, cfg Config, arch *benchArchive) (*RunData, error) {
	hc, err := config.NewClientFromConfig(cfg.HTTP, "joulemark-analyze")
	if err != nil {
		return nil, fmt.Errorf("prometheus HTTP client: %w", err)
	}
	client, err := api.NewClient(api.Config{Address: cfg.PrometheusURL, Client: limitClient(hc, cfg.maxResponse)})
	if err != nil {
		return nil, fmt.Errorf("prometheus client for %s: %w", secretfile.RedactURL(cfg.PrometheusURL), err)
	}
	l := &loader{api: v1.NewAPI(client), runID: cfg.RunID, lookback: cfg.Lookback, now: cfg.Now, timeout: cfg.QueryTimeout, engineSel: cfg.EngineSelector,
		readAPI: cfg.ReadAPI, log: cfg.Logger, wait: cfg.Wait}
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

// modeFromArchive sets d.Mode from the archive manifest's run identity
// when Prometheus's names none.
func modeFromArchive(d *RunData, arch *benchArchive) {
	if arch == nil || arch.manifest == nil || arch.manifest.RunInfo == nil || d.RunInfo != nil && d.RunInfo.Mode != "" {
		return
	}
	d.Mode = arch.manifest.RunInfo.Mode
}

// CarbonOverRun is the carbon intensity for the run: the constant, or the
// query's average from the report's first stage start to its last stage
// end; nil when neither is given or the query has no sample there.
func CarbonOverRun(ctx context.Context, cfg Config, r *report.Report) (*float64, error) {
	in := cfg.Cost
	if in.CarbonQuery == "" {
		return in.CarbonIntensity, nil
	}
	from, to := math.Inf(1), math.Inf(-1)
	for _, st := range r.Stages {
		from, to = min(from, st.Start), max(to, st.End)
	}
	if !(to > from) {
		return nil, nil
	}
	hc, err := config.NewClientFromConfig(cfg.HTTP, "joulemark-analyze")
	if err != nil {
		return nil, fmt.Errorf("prometheus HTTP client: %w", err)
	}
	client, err := api.NewClient(api.Config{Address: cfg.PrometheusURL, Client: limitClient(hc, cfg.maxResponse)})
	if err != nil {
		return nil, fmt.Errorf("prometheus client for %s: %w", secretfile.RedactURL(cfg.PrometheusURL), err)
	}
	return AverageOver(ctx, v1.NewAPI(client), in.CarbonQuery, from, to)
}
