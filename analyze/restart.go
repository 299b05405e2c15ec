package analyze

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/joulemark/joulemark/exporter/phaseapi"
	"github.com/joulemark/joulemark/internal/contract"
	"github.com/joulemark/joulemark/internal/runarchive"
)

// addExporterGaps reads the exporters' final run statuses from the
// archive's phases.json and flags every gap (an exporter restarted
// mid-run) with its interval; the gaps join measurement.gaps (series
// "exporter").
func addExporterGaps(r *Report, arch *runarchive.Run) error {
	views, err := readExporterViews(arch)
	if err != nil {
		return err
	}
	for _, e := range views {
		if e.Status == nil {
			continue
		}
		for _, g := range e.Status.Gaps {
			r.Measurement.Gaps = append(r.Measurement.Gaps, Gap{GPU: e.URL, Series: "exporter", Start: g.Start, End: g.End})
			r.Flags = append(r.Flags, Flag{Code: contract.FlagExporterRestarted, Message: fmt.Sprintf(
				"exporter %s was down from %s to %s (%.1f s, %s): no energy was measured there",
				e.URL, unixUTC(g.Start), unixUTC(g.End), g.End-g.Start, g.Reason)})
		}
		if len(e.Status.CoTenants) > 0 {
			r.Flags = append(r.Flags, Flag{Code: contract.FlagGPUShared, Message: fmt.Sprintf(
				"exporter %s: other pods held the run's GPUs (%s): their GPU energy is in the run's", e.URL, strings.Join(e.Status.CoTenants, ", "))})
		}
	}
	return nil
}

// exporterRestarts are the intervals the run's exporters were down, from
// the archive's phases.json (none without an archive).
func exporterRestarts(arch *runarchive.Run) ([][2]float64, error) {
	if arch == nil {
		return nil, nil
	}
	views, err := readExporterViews(arch)
	if err != nil {
		return nil, err
	}
	var out [][2]float64
	for _, e := range views {
		if e.Status == nil {
			continue
		}
		for _, g := range e.Status.Gaps {
			out = append(out, [2]float64{g.Start, g.End})
		}
	}
	return out, nil
}

// exporterView is one exporter's final status of the run as the bench
// archived it (phases.json); Status is nil where the bench could not get it.
type exporterView struct {
	URL    string              `json:"url"`
	Status *phaseapi.RunStatus `json:"status"`
}

// readExporterViews reads the archive's phases.json: the exporters'
// views of the run, none when the archive has no such file.
func readExporterViews(arch *runarchive.Run) ([]exporterView, error) {
	b, err := os.ReadFile(arch.Path(runarchive.PhasesFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the exporters' view of the run: %w", err)
	}
	var doc struct {
		Exporters []exporterView `json:"exporters"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("reading %s: %w", arch.Path(runarchive.PhasesFile), err)
	}
	return doc.Exporters, nil
}

func unixUTC(s float64) string {
	return time.Unix(0, int64(s*1e9)).UTC().Format(time.RFC3339Nano)
}
