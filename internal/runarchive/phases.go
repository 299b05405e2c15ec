package runarchive

import "github.com/joulemark/joulemark/exporter/phaseapi"

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
