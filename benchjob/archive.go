package benchjob

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"sync"

	"github.com/joulemark/joulemark/internal/runarchive"
)

// The archive's file names and errors are runarchive's; these names are
// kept for the callers of benchjob.
const (
	ManifestFile      = runarchive.ManifestFile
	ConfigFile        = runarchive.ConfigFile
	RequestsFile      = runarchive.RequestsFile
	PhasesFile        = runarchive.PhasesFile
	EngineLogFile     = runarchive.EngineLogFile
	EngineMetricsFile = runarchive.EngineMetricsFile
)

// ErrRunExists is runarchive.ErrExists: runs/<run_id> exists, and a run is
// never overwritten.
var ErrRunExists = runarchive.ErrExists

// archive streams one run's records into its runarchive directory:
// requests.jsonl.partial while the run goes on, renamed to requests.jsonl
// once complete (a crash leaves the partial file in place).
type archive struct {
	*runarchive.Run

	mu  sync.Mutex
	f   *os.File
	w   *bufio.Writer
	enc *json.Encoder
	err error
	n   int
}

// openArchive opens the partial requests file of run.
func openArchive(run *runarchive.Run) (*archive, error) {
	f, err := run.CreatePartial(runarchive.RequestsFile)
	if err != nil {
		return nil, fmt.Errorf("run %s: %w", run.ID, err)
	}
	a := &archive{Run: run, f: f, w: bufio.NewWriterSize(f, 256<<10)}
	a.enc = json.NewEncoder(a.w)
	return a, nil
}

// append writes one record line; the first error sticks and is returned by
// closeRequests (the run goes on: the records stay in memory too).
func (a *archive) append(r *runarchive.Request) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.err != nil || a.enc == nil {
		return
	}
	if err := a.enc.Encode(r); err != nil {
		a.err = fmt.Errorf("writing %s%s: %w", runarchive.RequestsFile, runarchive.PartialSuffix, err)
		return
	}
	a.n++
}

// flush pushes buffered records to the file (so a crash loses little).
func (a *archive) flush() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.err == nil && a.w != nil {
		if err := a.w.Flush(); err != nil {
			a.err = fmt.Errorf("writing %s%s: %w", runarchive.RequestsFile, runarchive.PartialSuffix, err)
		}
	}
}

// closeRequests flushes, syncs and renames the records file into place.
// After a write error the partial file stays (never passed off as
// complete).
func (a *archive) closeRequests() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.f == nil {
		return a.err
	}
	f := a.f
	err := a.err
	if err == nil {
		err = a.w.Flush()
	}
	a.f, a.w, a.enc = nil, nil, nil
	if err != nil {
		f.Close()
		a.err = fmt.Errorf("run archive %s: requests: %w", a.Dir, err)
		return a.err
	}
	if err := a.Commit(f, runarchive.RequestsFile); err != nil {
		a.err = err
	}
	return a.err
}

// createArchive creates the run's directory, RunsDir/RunID (or takes the
// one the caller created, Options.Archive), and opens its requests file.
func createArchive(cfg Config, opts Options) (*archive, error) {
	run := opts.Archive
	if run == nil {
		var err error
		if run, err = runarchive.Create(cfg.RunsDir, cfg.RunID); err != nil {
			return nil, err
		}
	} else if run.ID != cfg.RunID {
		return nil, fmt.Errorf("run archive %s is run %q, the config's run_id is %q", run.Dir, run.ID, cfg.RunID)
	}
	return openArchive(run)
}
