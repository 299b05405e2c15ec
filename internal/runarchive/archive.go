// Package runarchive owns a run's directory on disk, runs/<run_id>/: it
// creates it (never over an earlier run), names its files, holds the
// schemas of its documents (Manifest, Request, Phases) with their writers
// and readers (one streaming reader of requests.jsonl, EachRequest), lists
// the runs of a runs directory and finalizes a run that did not finish.
// The bench job writes through it; analyze, compare, pareto, plan,
// recommend, diff, the demo and `joulemark runs` read through it. The
// layout and the formats are documented in docs/design.md ("Run
// archive").
package runarchive

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/joulemark/joulemark/internal/atomicfile"
	"github.com/joulemark/joulemark/internal/contract"
)

// Files and directories inside runs/<run_id>/.
const (
	ManifestFile      = "manifest.json"
	ConfigFile        = "config.yaml"
	RequestsFile      = "requests.jsonl"
	PhasesFile        = "phases.json"
	EngineLogFile     = "engine.log"
	EngineMetricsFile = "engine_metrics.jsonl"
	// ReportDir holds analyze's report of the run (the demo writes it).
	ReportDir = "report"
	// PartialSuffix marks a file still being written: requests.jsonl.partial
	// while the run goes on, renamed to requests.jsonl once complete. A run
	// killed on the way leaves it behind (Finalize turns it final).
	PartialSuffix = ".partial"
)

// ErrExists is wrapped by Create's error when runs/<run_id> already exists:
// a run is never overwritten; a re-test gets a new run id.
var ErrExists = errors.New("run already exists")

// ErrIncomplete is wrapped by CheckRequests' error when the run holds only
// requests.jsonl.partial: the bench job did not finish.
var ErrIncomplete = errors.New("incomplete")

// ErrNoManifest is wrapped by ReadManifest's error when the run has no
// manifest.json (a directory that is not a bench archive, or a run that
// died before writing one). It also wraps fs.ErrNotExist.
var ErrNoManifest = fmt.Errorf("no %s: %w", ManifestFile, fs.ErrNotExist)

// Run is one run's directory.
type Run struct {
	// ID is the run id, the directory's name.
	ID string
	// Dir is runs/<run_id>.
	Dir string
}

// Create makes runsDir/<id>/ (and runsDir when missing) and returns it. An
// existing directory is refused with ErrExists, never reused. id must be
// valid (contract.ValidateRunID): it becomes a path element.
func Create(runsDir, id string) (*Run, error) {
	if err := contract.ValidateRunID(id); err != nil {
		return nil, err
	}
	if runsDir == "" {
		return nil, errors.New("runs directory: empty path")
	}
	if err := os.MkdirAll(runsDir, 0o755); err != nil {
		return nil, fmt.Errorf("runs directory: %w", err)
	}
	dir := filepath.Join(runsDir, id)
	err := os.Mkdir(dir, 0o755)
	if errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("run %q in %s: %w (never overwritten: give a new run id)", id, runsDir, ErrExists)
	}
	if err != nil {
		return nil, fmt.Errorf("run directory: %w", err)
	}
	return &Run{ID: id, Dir: dir}, nil
}

// Open returns the existing run runsDir/<id>.
func Open(runsDir, id string) (*Run, error) {
	if err := contract.ValidateRunID(id); err != nil {
		return nil, err
	}
	return OpenDir(filepath.Join(runsDir, id))
}

// OpenDir returns the existing run in dir (its id is the directory's name;
// the manifest's run_id, when there is one, is the run's id).
func OpenDir(dir string) (*Run, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("run archive: %w", err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("run archive %s: not a directory", dir)
	}
	return &Run{ID: filepath.Base(filepath.Clean(dir)), Dir: dir}, nil
}

// Path is the path of name inside the run's directory.
func (r *Run) Path(name string) string { return filepath.Join(r.Dir, name) }

// WriteFile writes name atomically (temporary file, fsync, rename).
func (r *Run) WriteFile(name string, data []byte) error {
	if err := atomicfile.WriteFile(r.Path(name), data); err != nil {
		return fmt.Errorf("run archive: %w", err)
	}
	return nil
}

// CreateFile opens a new file in the run's directory for writing (engine
// logs, engine metrics); it refuses to replace an existing one.
func (r *Run) CreateFile(name string) (*os.File, error) {
	f, err := os.OpenFile(r.Path(name), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, fmt.Errorf("run archive: %w", err)
	}
	return f, nil
}

// CreatePartial opens name+".partial" for writing (refusing an existing
// one); Commit renames it to name once it is complete.
func (r *Run) CreatePartial(name string) (*os.File, error) {
	return r.CreateFile(name + PartialSuffix)
}

// Commit syncs and closes f, the file CreatePartial opened for name, and
// renames it into place. It refuses to replace an existing name.
func (r *Run) Commit(f *os.File, name string) error {
	err := f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = r.rename(name)
	}
	if err != nil {
		return fmt.Errorf("run archive %s: %s: %w", r.Dir, name, err)
	}
	return nil
}

// rename moves name.partial to name without replacing name.
func (r *Run) rename(name string) error {
	if _, err := os.Lstat(r.Path(name)); err == nil {
		return fmt.Errorf("%s: %w", name, fs.ErrExist)
	}
	return os.Rename(r.Path(name+PartialSuffix), r.Path(name))
}

// CheckRequests says whether the run holds a complete requests.jsonl, so a
// reader can fail before any other work; a run that did not finish (only
// requests.jsonl.partial) gets an error saying so.
func (r *Run) CheckRequests() error {
	p := r.Path(RequestsFile)
	st, err := os.Stat(p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if _, perr := os.Stat(p + PartialSuffix); perr == nil {
			return fmt.Errorf("run archive %s is %w: %s%s but no %s (the bench job did not finish; `joulemark runs finalize` turns it final)", r.Dir, ErrIncomplete, RequestsFile, PartialSuffix, RequestsFile)
		}
		return fmt.Errorf("run archive %s: no %s (want the runs/<run_id> directory of a bench run): %w", r.Dir, RequestsFile, fs.ErrNotExist)
	case err != nil:
		return fmt.Errorf("run archive: %w", err)
	case st.IsDir():
		return fmt.Errorf("run archive: %s is a directory", p)
	}
	return nil
}

// openRequests opens the run's complete requests.jsonl (CheckRequests
// first).
func (r *Run) openRequests() (*os.File, error) {
	if err := r.CheckRequests(); err != nil {
		return nil, err
	}
	f, err := os.Open(r.Path(RequestsFile))
	if err != nil {
		return nil, fmt.Errorf("run archive: %w", err)
	}
	return f, nil
}
