package benchjob

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/joulemark/joulemark/internal/atomicfile"
)

// ErrRunExists is returned when runs/<run_id> already exists: a run is never
// overwritten; a re-test gets a new run id.
var ErrRunExists = errors.New("run already exists")

// Archive file names inside runs/<run_id>/.
const (
	ManifestFile      = "manifest.json"
	ConfigFile        = "config.yaml"
	RequestsFile      = "requests.jsonl"
	PhasesFile        = "phases.json"
	EngineLogFile     = "engine.log"
	EngineMetricsFile = "engine_metrics.jsonl"
	// requestsPartial holds the records while the run goes on; it is
	// renamed to requests.jsonl once complete (a crash leaves it in place).
	requestsPartial = "requests.jsonl.partial"
)

// archive is one run's directory.
type archive struct {
	dir string

	mu  sync.Mutex
	f   *os.File
	w   *bufio.Writer
	enc *json.Encoder
	err error
	n   int
}

// NewRunID returns a fresh run id: UTC time plus 48 random bits.
func NewRunID() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return time.Now().UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(b[:])
}

// createArchive makes runs/<runID>/ (refusing one that exists) and opens
// the partial requests file. An empty runID gets a generated one.
func createArchive(runsDir, runID string) (*archive, string, error) {
	if err := os.MkdirAll(runsDir, 0o755); err != nil {
		return nil, "", fmt.Errorf("runs dir: %w", err)
	}
	generated := runID == ""
	for try := 0; ; try++ {
		if generated {
			runID = NewRunID()
		}
		dir := filepath.Join(runsDir, runID)
		err := os.Mkdir(dir, 0o755)
		if errors.Is(err, fs.ErrExist) {
			if generated && try < 5 {
				continue
			}
			return nil, "", fmt.Errorf("run %q in %s: %w (never overwritten: give a new --run-id)", runID, runsDir, ErrRunExists)
		}
		if err != nil {
			return nil, "", fmt.Errorf("run directory: %w", err)
		}
		f, err := os.OpenFile(filepath.Join(dir, requestsPartial), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
		if err != nil {
			return nil, "", fmt.Errorf("run %s: %w", runID, err)
		}
		a := &archive{dir: dir, f: f, w: bufio.NewWriterSize(f, 256<<10)}
		a.enc = json.NewEncoder(a.w)
		return a, runID, nil
	}
}

// append writes one record line; the first error sticks and is returned by
// closeRequests (the run goes on: the records stay in memory too).
func (a *archive) append(r *Record) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.err != nil || a.enc == nil {
		return
	}
	if err := a.enc.Encode(r); err != nil {
		a.err = fmt.Errorf("writing %s: %w", requestsPartial, err)
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
			a.err = fmt.Errorf("writing %s: %w", requestsPartial, err)
		}
	}
}

// closeRequests flushes, syncs and renames the records file into place.
func (a *archive) closeRequests() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.f == nil {
		return a.err
	}
	err := a.err
	if err == nil {
		err = a.w.Flush()
	}
	if err == nil {
		err = a.f.Sync()
	}
	if cerr := a.f.Close(); err == nil {
		err = cerr
	}
	a.f, a.w, a.enc = nil, nil, nil
	if err == nil {
		err = os.Rename(filepath.Join(a.dir, requestsPartial), filepath.Join(a.dir, RequestsFile))
	}
	if err != nil {
		a.err = fmt.Errorf("run archive %s: requests: %w", a.dir, err)
	}
	return a.err
}

// writeJSON writes name atomically (temp file, fsync, rename).
func (a *archive) writeJSON(name string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("run archive %s: encoding %s: %w", a.dir, name, err)
	}
	return atomicfile.WriteFile(filepath.Join(a.dir, name), append(b, '\n'))
}

// create opens a new file in the archive (engine logs); it refuses to
// replace one.
func (a *archive) create(name string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(a.dir, name), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, fmt.Errorf("run archive %s: %w", a.dir, err)
	}
	return f, nil
}
