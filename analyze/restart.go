package analyze

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/joulemark/joulemark/exporter/phaseapi"
	"github.com/joulemark/joulemark/internal/contract"
	"github.com/joulemark/joulemark/internal/runarchive"
)

// addExporterGaps flags every gap (an exporter restarted mid-run) in the
// exporters' final run statuses (the archive's phases.json) with its
// interval; the gaps join measurement.gaps (series "exporter").
func addExporterGaps(r *Report, views []runarchive.ExporterStatus) {
	for _, e := range views {
		if e.Status == nil {
			continue
		}
		for _, g := range e.Status.Gaps {
			r.Measurement.Gaps = append(r.Measurement.Gaps, Gap{GPU: e.URL, Series: "exporter", Start: g.Start, End: g.End})
			r.Flags = append(r.Flags, Flag{Code: contract.FlagExporterRestarted, Message: fmt.Sprintf(
				"exporter %s was down from %s to %s (%.1f s, %s): %s",
				e.URL, unixUTC(g.Start), unixUTC(g.End), g.End-g.Start, g.Reason, gapEnergy(g, e.Status.GPUs))})
		}
		if len(e.Status.CoTenants) > 0 {
			r.Flags = append(r.Flags, Flag{Code: contract.FlagGPUShared, Message: fmt.Sprintf(
				"exporter %s: other pods held the run's GPUs (%s): their GPU energy is in the run's", e.URL, strings.Join(e.Status.CoTenants, ", "))})
		}
	}
}

// gapEnergy says what energy a gap's GPUs have: their own counters' (the
// exporter bridged the downtime with them) or none.
func gapEnergy(g phaseapi.Gap, gpus []phaseapi.GPUInfo) string {
	var lost []string
	for _, gi := range gpus {
		if !slices.Contains(g.EnergyBridgedGPUs, gi.GPU) {
			lost = append(lost, strconv.Itoa(gi.GPU))
		}
	}
	var bridged []string
	for _, i := range g.EnergyBridgedGPUs {
		bridged = append(bridged, strconv.Itoa(i))
	}
	switch {
	case len(bridged) == 0:
		return "no energy was measured there"
	case len(lost) == 0:
		return fmt.Sprintf("no power was sampled there, but the GPUs' own energy counters gave the downtime's energy (GPU %s), which the stage energies count",
			strings.Join(bridged, ", "))
	}
	return fmt.Sprintf("no power was sampled there; the downtime's energy of GPU %s came from their own energy counters and is counted, none was measured on GPU %s",
		strings.Join(bridged, ", "), strings.Join(lost, ", "))
}

// exporterRestarts are the intervals the run's exporters were down, from
// the archive's phases.json.
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
