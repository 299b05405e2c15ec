package benchjob

import (
	"fmt"
	"slices"

	"github.com/joulemark/joulemark/internal/contract"
)

// Unusable lists why a run that completed cannot be used (docs/cli.md, exit
// code 3): no successful formal request, an exporter that lost phases or
// could not be reached, every per-request sample lost. Empty: usable.
func (r *Result) Unusable() []string {
	var why []string
	if r.Summary.Succeeded == 0 {
		why = append(why, fmt.Sprintf("no successful formal request (%d started)", r.Summary.Started))
	}
	for _, f := range []struct{ flag, msg string }{
		{contract.FlagExporterLostPhases, "an exporter lost phases the bench posted"},
		{contract.FlagExporterError, "an exporter could not be reached for a phase or the final status"},
	} {
		if slices.Contains(r.Flags, f.flag) {
			why = append(why, f.msg+" ("+f.flag+")")
		}
	}
	if st := r.RemoteWrite; r.RemoteWriteURL != "" && st.Acknowledged == 0 && st.Lost() > 0 {
		why = append(why, fmt.Sprintf("every per-request sample was lost (%d) on the way to %s", st.Lost(), r.RemoteWriteURL))
	}
	return why
}
