package analyze

import (
	"context"
	"fmt"
	"math"
	"runtime/debug"

	v1 "github.com/prometheus/client_golang/api/prometheus/v1"

	"github.com/joulemark/joulemark/internal/contract"
	"github.com/joulemark/joulemark/internal/promquery"
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
	// The reads' buffers (decoded chunks, per-window parts) are garbage
	// now: hand their pages back before Compute allocates, so that they do
	// not add to the process' peak RSS.
	debug.FreeOSMemory()
	return Input{Run: d, Archive: arch, Carbon: carbon, Scenario: cfg.Scenario, GeneratedBy: version.String()}, nil
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
	return promquery.AverageOver(ctx, prom, in.CarbonQuery, from, to)
}
