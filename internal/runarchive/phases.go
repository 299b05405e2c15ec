package runarchive

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/joulemark/joulemark/exporter/phaseapi"
	"github.com/joulemark/joulemark/internal/jsonline"
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
	p := r.Path(PhasesFile)
	data, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("run archive %s: %w", r.Dir, ErrNoPhases)
	}
	if err != nil {
		return nil, fmt.Errorf("run archive: %w", err)
	}
	ph := new(Phases)
	if err := json.Unmarshal(data, ph); err != nil {
		return nil, fmt.Errorf("run archive: reading %s: %w", p, jsonline.Wrap(data, err))
	}
	return ph, nil
}
