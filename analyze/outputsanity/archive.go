package outputsanity

import (
	"errors"
	"fmt"

	"github.com/joulemark/joulemark/internal/runarchive"
)

// ReadArchive counts the suspicious outputs of the bench run in r: its
// requests.jsonl, and extras.ignore_eos from its manifest.json when it has
// one. Errors name the file and line.
func ReadArchive(r *runarchive.Run) (Counts, error) {
	f, err := r.OpenRequests()
	if err != nil {
		return Counts{}, err
	}
	defer f.Close()
	c, err := Read(f)
	if err != nil {
		return Counts{}, fmt.Errorf("bench archive %s: %w", f.Name(), err)
	}
	m, err := r.ReadManifest()
	switch {
	case errors.Is(err, runarchive.ErrNoManifest):
	case err != nil:
		return Counts{}, err
	default:
		c.IgnoreEOS = m.IgnoreEOS()
	}
	return c, nil
}
