package runarchive

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/joulemark/joulemark/internal/contract"
)

// Entry is one run of a runs directory. Manifest is nil when it could not
// be read; Err says why (wrapping ErrNoManifest for a run that died before
// writing one).
type Entry struct {
	*Run
	Manifest *Manifest
	Err      error
}

// List returns the runs in runsDir: every subdirectory whose name is a
// valid run id, oldest first (by the manifest's created time, then by id;
// a run without a readable manifest sorts first). Other entries are
// skipped. A missing runsDir is an error wrapping fs.ErrNotExist.
func List(runsDir string) ([]Entry, error) {
	des, err := os.ReadDir(runsDir)
	if err != nil {
		return nil, fmt.Errorf("runs directory: %w", err)
	}
	var out []Entry
	for _, de := range des {
		if !de.IsDir() || contract.ValidateRunID(de.Name()) != nil {
			continue
		}
		r := &Run{ID: de.Name(), Dir: filepath.Join(runsDir, de.Name())}
		m, err := r.ReadManifest()
		out = append(out, Entry{Run: r, Manifest: m, Err: err})
	}
	slices.SortStableFunc(out, func(a, b Entry) int {
		return cmp.Or(cmp.Compare(a.created(), b.created()), cmp.Compare(a.ID, b.ID))
	})
	return out, nil
}

func (e Entry) created() float64 {
	if e.Manifest == nil {
		return 0
	}
	return e.Manifest.Created
}

// Status is the run's status, or "unknown" when its manifest is unreadable.
func (e Entry) Status() string {
	if e.Manifest == nil {
		return "unknown"
	}
	return e.Manifest.Status
}
