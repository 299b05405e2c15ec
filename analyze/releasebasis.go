package analyze

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/joulemark/joulemark/phaseapi"
	"github.com/joulemark/joulemark/runarchive"
)

// FlagReleaseProcessUnverified warns (without excluding the run) that an
// exporter met the release's process criterion without evidence: none of
// the run's GPUs could list its processes and the bench did not report the
// engine's exit.
const FlagReleaseProcessUnverified = "release_process_unverified"

// basisRank orders the process criterion's bases from the weakest.
var basisRank = map[string]int{phaseapi.BasisUnverified: 0, phaseapi.BasisNVML: 1, phaseapi.BasisEngineExit: 2}

// addReleaseBasis reads what each exporter judged the release's process
// criterion from (the archive's phases.json) into release.process_basis,
// the weakest over the exporters, and flags an unverified one.
func addReleaseBasis(r *Report, arch *runarchive.Run) error {
	b, err := os.ReadFile(arch.Path(runarchive.PhasesFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading the exporters' view of the run: %w", err)
	}
	var doc struct {
		Exporters []struct {
			URL    string              `json:"url"`
			Status *phaseapi.RunStatus `json:"status"`
		} `json:"exporters"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return fmt.Errorf("reading %s: %w", arch.Path(runarchive.PhasesFile), err)
	}
	for _, e := range doc.Exporters {
		if e.Status == nil || e.Status.Release.State != phaseapi.ReleaseClosed {
			continue
		}
		for _, c := range e.Status.Release.Criteria {
			rank, known := basisRank[c.Basis]
			if c.Name != phaseapi.CriterionProcess || !known {
				continue
			}
			if r.Release.ProcessBasis == "" || rank < basisRank[r.Release.ProcessBasis] {
				r.Release.ProcessBasis = c.Basis
			}
			if c.Basis == phaseapi.BasisUnverified {
				r.Flags = append(r.Flags, Flag{Code: FlagReleaseProcessUnverified, Message: fmt.Sprintf(
					"exporter %s met the release's process criterion without evidence: no GPU of the run could list its processes (run it as a user that can) and the bench did not report the engine's exit",
					e.URL)})
			}
		}
	}
	return nil
}
