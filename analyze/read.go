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

	"github.com/joulemark/joulemark/internal/contract"
	"github.com/joulemark/joulemark/internal/remoteread"
	"github.com/joulemark/joulemark/internal/runarchive"
	"github.com/joulemark/joulemark/internal/secretfile"
	"github.com/joulemark/joulemark/internal/version"
	"github.com/joulemark/joulemark/report"
)

// Input is everything one analysis reads, read once before anything is
// computed: the run's series from Prometheus (the bench archive filling in
// what Prometheus lacks), the bench archive, the carbon intensity over the
// run, and what the report is labelled with.
type Input struct {
	Run     *RunData
	Archive *BenchArchive // nil without one
	// Carbon is the carbon intensity (gCO2e/kWh) over the run: the
	// constant, or the query's average over the run's phases; nil when
	// neither is given or the query has no sample there.
	Carbon      *float64
	Scenario    string // the report's scenario (else the run identity's)
	GeneratedBy string // the joulemark version that wrote the report
}

// read reads the run once, cfg validated: its bench archive (checked before
// any query), its series from Prometheus, what the archive tells of the
// run, and the carbon intensity over the run's phases.
func read(ctx context.Context, cfg Config) (Input, error) {
	arch, err := cfg.openArchive()
	if err != nil {
		return Input{}, err
	}
	prom, err := promAPI(cfg)
	if err != nil {
		return Input{}, err
	}
	d, err := load(ctx, cfg, prom, arch)
	if err != nil {
		return Input{}, err
	}
	if arch != nil {
		if err := arch.fillRun(d); err != nil {
			return Input{}, err
		}
	}
	carbon, err := carbonOverRun(ctx, prom, cfg.Cost, d)
	if err != nil {
		return Input{}, fmt.Errorf("analyzing run %q: %w", cfg.RunID, err)
	}
	return Input{Run: d, Archive: arch, Carbon: carbon, Scenario: cfg.Scenario, GeneratedBy: version.String()}, nil
}

// openArchive reads the run's bench archive (Config.Archive, else
// RunsDir/<run_id> when it exists) in one pass; nil when there is none to
// read. It fails when the archive is incomplete, malformed or holds
// another run: a wrong archive would put another run's outputs in the
// report.
func (c *Config) openArchive() (*BenchArchive, error) {
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

// promAPI is the Prometheus query API of cfg, its answers bounded in size.
func promAPI(cfg Config) (v1.API, error) {
	hc, err := config.NewClientFromConfig(cfg.HTTP, "joulemark-analyze")
	if err != nil {
		return nil, fmt.Errorf("prometheus HTTP client: %w", err)
	}
	client, err := api.NewClient(api.Config{Address: cfg.PrometheusURL, Client: limitClient(hc, cfg.maxResponse)})
	if err != nil {
		return nil, fmt.Errorf("prometheus client for %s: %w", secretfile.RedactURL(cfg.PrometheusURL), err)
	}
	return v1.NewAPI(client), nil
}

// load reads the run's data from Prometheus; arch, when set, is the run's
// bench archive, whose phases.json fills in what Prometheus lacks.
func load(ctx context.Context, cfg Config, prom v1.API, arch *BenchArchive) (*RunData, error) {
	l := &loader{api: prom, runID: cfg.RunID, lookback: cfg.Lookback, now: cfg.Now, timeout: cfg.QueryTimeout, engineSel: cfg.EngineSelector,
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

// fillRun adds to d what the archive tells of the run: its mode when
// Prometheus names none, the requests when Prometheus lost some
// (crossCheck), the formal phase's end of an interrupted run, the
// exporters' restarts and the bench's report of its own load.
func (a *BenchArchive) fillRun(d *RunData) error {
	if a.manifest != nil && a.manifest.RunInfo != nil && (d.RunInfo == nil || d.RunInfo.Mode == "") {
		d.Mode = a.manifest.RunInfo.Mode
	}
	if err := a.crossCheck(d); err != nil {
		return err
	}
	a.clampInterrupted(d)
	d.ExporterRestarts = exporterRestarts(a.views)
	d.Client = a.clientReport()
	return nil
}

// carbonOverRun is the carbon intensity for the run: the constant, or the
// query's average from the run's first complete phase start to its last
// complete phase end (the report's stages); nil when neither is given or
// the query has no sample there.
func carbonOverRun(ctx context.Context, prom v1.API, in report.CostInputs, d *RunData) (*float64, error) {
	if in.CarbonQuery == "" {
		return in.CarbonIntensity, nil
	}
	from, to := math.Inf(1), math.Inf(-1)
	for _, ph := range contract.Phases {
		if b := d.Phases[string(ph)]; b.HasStart && b.HasEnd && b.End >= b.Start {
			from, to = min(from, b.Start), max(to, b.End)
		}
	}
	if !(to > from) {
		return nil, nil
	}
	return AverageOver(ctx, prom, in.CarbonQuery, from, to)
}
