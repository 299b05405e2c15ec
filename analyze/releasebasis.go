package analyze

import (
	"fmt"

	"github.com/joulemark/joulemark/internal/contract"
	"github.com/joulemark/joulemark/internal/phaseapi"
	"github.com/joulemark/joulemark/internal/runarchive"
	"github.com/joulemark/joulemark/report"
)

// basisRank orders the process criterion's bases from the weakest.
var basisRank = map[string]int{phaseapi.BasisUnverified: 0, phaseapi.BasisNVML: 1, phaseapi.BasisEngineExit: 2}

// addReleaseBasis puts what each exporter judged the release's process
// criterion from (the archive's phases.json) into release.process_basis,
// the weakest over the exporters, and flags an unverified one.
func addReleaseBasis(r *report.Report, views []runarchive.ExporterStatus) {
	for _, e := range views {
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
				r.Flags = append(r.Flags, report.Flag{Code: contract.FlagReleaseProcessUnverified, Message: fmt.Sprintf(
					"exporter %s met the release's process criterion without evidence: no GPU of the run could list its processes (run it as a user that can) and the bench did not report the engine's exit",
					e.URL)})
			}
		}
	}
}
