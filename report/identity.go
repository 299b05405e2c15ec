package report

import (
	"github.com/joulemark/joulemark/internal/contract"
)

// RunIdentity is report.json "run": what was tested, from the bench job's
// joulemark_run_info (Prometheus) or, failing that, its archive's
// manifest.json; Source says which.
type RunIdentity struct {
	contract.RunIdentity
	Source string `json:"source"` // prometheus or archive
}
