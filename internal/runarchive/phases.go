package runarchive

import (
	"fmt"
	"io/fs"

	"github.com/joulemark/joulemark/internal/phaseapi"
)

// ErrNoPhases is wrapped by ReadPhases' error when the run has no
// phases.json (the bench died before its end). It also wraps
// fs.ErrNotExist.
var ErrNoPhases = fmt.Errorf("no %s: %w", PhasesFile, fs.ErrNotExist)

// Phases is runs/<run_id>/phases.json: each exporter's final RunStatus.
type Phases struct {
	RunID     string           `json:"run_id"`
	Exporters []ExporterStatus `json:"exporters"`
}

// ExporterStatus is one exporter's view of the run.
type ExporterStatus struct {
	URL    string              `json:"url"`
	Status *phaseapi.RunStatus `json:"status,omitempty"`
	Error  string              `json:"error,omitempty"`
}

// WritePhases writes phases.json atomically.
func (r *Run) WritePhases(p *Phases) error {
	return r.WriteJSON(PhasesFile, p)
}

// ReadPhases reads the run's phases.json. A run without one gets an error
// wrapping ErrNoPhases (and fs.ErrNotExist).
func (r *Run) ReadPhases() (*Phases, error) {
	return readDocument[Phases](r, PhasesFile, ErrNoPhases)
}
