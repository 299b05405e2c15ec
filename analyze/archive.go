package analyze

import (
	"errors"
	"fmt"
	"io/fs"
	"slices"

	"github.com/joulemark/joulemark/internal/contract"
	"github.com/joulemark/joulemark/internal/runarchive"
	"github.com/joulemark/joulemark/report"
	"github.com/joulemark/joulemark/report/outputsanity"
)

// BenchArchive is what analyze takes from the run's bench archive, read
// in one pass before any query: the manifest, the exporters' final views
// of the run (phases.json) and, from one scan of requests.jsonl, the
// output sanity counts and the quality verdicts.
type BenchArchive struct {
	dir string
	run *runarchive.Run
	// tally sums the archived requests (crossCheck).
	tally requestTally
	// manifest is nil when the archive has none.
	manifest *runarchive.Manifest
	// views are phases.json's exporters; none without the file.
	views   []runarchive.ExporterStatus
	sanity  report.OutputCounts
	quality runarchive.QualitySummary
}

// clientReport is the bench's report of its own load, from the manifest;
// nil without one.
func (a *BenchArchive) clientReport() *ClientReport {
	if a == nil || a.manifest == nil {
		return nil
	}
	m := a.manifest
	return &ClientReport{CPURatio: m.Load.ClientCPURatio, LagP99Seconds: m.Load.LagP99Seconds, MaxLagSeconds: m.Load.MaxLagSeconds,
		CPUSaturated: slices.Contains(m.Flags, contract.FlagClientCPU), Lagging: slices.Contains(m.Flags, contract.FlagClientLag)}
}

// readBenchArchive reads run's archive of run runID: a manifest of another
// run is refused (it would put another run's outputs in the report), so is
// an incomplete or malformed requests.jsonl.
func readBenchArchive(run *runarchive.Run, runID string) (*BenchArchive, error) {
	if err := run.CheckRequests(); err != nil {
		return nil, err
	}
	a := &BenchArchive{dir: run.Dir, run: run}
	m, err := run.ReadManifest()
	switch {
	case errors.Is(err, runarchive.ErrNoManifest):
	case err != nil:
		return nil, err
	case m.RunID != runID:
		return nil, fmt.Errorf("bench archive %s holds run %q, not %q", run.Dir, m.RunID, runID)
	default:
		a.manifest = m
	}
	ph, err := run.ReadPhases()
	switch {
	case errors.Is(err, runarchive.ErrNoPhases):
	case err != nil:
		return nil, fmt.Errorf("reading the exporters' view of the run: %w", err)
	default:
		a.views = ph.Exporters
	}
	var sanity outputsanity.Counter
	if a.manifest != nil {
		sanity.IgnoreEOS = a.manifest.IgnoreEOS()
	}
	err = run.EachRequest(func(_ int, r *runarchive.Request) error {
		sanity.Add(r)
		if x, ok := archivedRequest(r); ok {
			a.tally.add(x.Formal, x.Success, x.OutputTokens, x.InputTokens)
		}
		if r.Phase == string(contract.Formal) && r.Success && r.Quality != nil {
			a.quality.Add(*r.Quality)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	a.sanity = sanity.Counts()
	return a, nil
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
