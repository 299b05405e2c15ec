package analyze

import (
	"fmt"
	"strings"
	"time"

	"github.com/joulemark/joulemark/internal/contract"
	"github.com/joulemark/joulemark/internal/phaseapi"
	"github.com/joulemark/joulemark/internal/runarchive"
	"github.com/joulemark/joulemark/report"
)

// addExporterGaps flags every gap (an exporter restarted mid-run, or one
// of the run's GPUs was missing after its restart) in the exporters' final
// run statuses (the archive's phases.json) with its interval; the gaps
// join measurement.gaps (series "exporter"; a GPU's own gap names the
// GPUs after the exporter).
func addExporterGaps(r *report.Report, views []runarchive.ExporterStatus) {
	for _, e := range views {
		if e.Status == nil {
			continue
		}
		for _, g := range e.Status.Gaps {
			r.Measurement.Gaps = append(r.Measurement.Gaps, report.Gap{GPU: g.Subject(e.URL), Series: "exporter", Start: g.Start, End: g.End})
			if g.GPUFailure() {
				addGPUFailed(r, g, e)
				continue
			}
			r.Flags = append(r.Flags, report.Flag{Code: contract.FlagExporterRestarted, Message: g.Describe(e.URL, e.Status.GPUs)})
		}
		if len(e.Status.CoTenants) > 0 {
			r.Flags = append(r.Flags, report.Flag{Code: contract.FlagGPUShared, Excluding: true, Message: fmt.Sprintf(
				"exporter %s: other pods held the run's GPUs (%s) during the run: their GPU energy is in the run's", e.URL, strings.Join(e.Status.CoTenants, ", "))})
			r.Valid = false
		}
	}
}

// addGPUFailed flags gap g of a GPU that stopped answering on exporter e:
// excluding when it overlaps the formal phase without its energy counted
// there (its own counter did not bridge it).
func addGPUFailed(r *report.Report, g phaseapi.Gap, e runarchive.ExporterStatus) {
	f, ok := r.Stages[string(contract.Formal)]
	excl := ok && g.Unbridged(e.Status.GPUs) && g.Start < f.End && g.End > f.Start
	msg := g.Describe(e.URL, e.Status.GPUs)
	if excl {
		msg += "; the formal energy misses it"
		r.Valid = false
	}
	r.Flags = append(r.Flags, report.Flag{Code: contract.FlagGPUFailed, Message: msg, Excluding: excl})
}

// exporterRestarts are the intervals the run's exporters were down, or one
// of the run's GPUs was missing after a restart, from the archive's
// phases.json.
func exporterRestarts(views []runarchive.ExporterStatus) [][2]float64 {
	var out [][2]float64
	for _, e := range views {
		if e.Status == nil {
			continue
		}
		for _, g := range e.Status.Gaps {
			out = append(out, [2]float64{g.Start, g.End})
		}
	}
	return out
}

func unixUTC(s float64) string {
	return time.Unix(0, int64(s*1e9)).UTC().Format(time.RFC3339Nano)
}
