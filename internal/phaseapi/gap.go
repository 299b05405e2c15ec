package phaseapi

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/joulemark/joulemark/internal/contract"
)

// Describe says what a gap of a run on the exporter at url means, for a
// report flag or a log line: who was not measured, over which interval,
// and what energy the run still has there (gpus are the run's GPUs).
func (g Gap) Describe(url string, gpus []GPUInfo) string {
	what := fmt.Sprintf("exporter %s was down", url)
	switch {
	case g.Reason == contract.GapGPUFailed:
		what = fmt.Sprintf("exporter %s: the reads of GPU %s failed and it was not measured", url, joinInts(g.GPUs))
	case g.Reason == contract.GapGPUHung:
		what = fmt.Sprintf("exporter %s: the reads of GPU %s hung and it was not measured", url, joinInts(g.GPUs))
	case len(g.VanishedUUIDs) > 0 && len(g.GPUs) == 0:
		return fmt.Sprintf("exporter %s: GPU %s of the run was not found after its restart and not measured from %s to %s (%.1f s, %s): its energy is not in the run's",
			url, strings.Join(g.VanishedUUIDs, ", "), unixUTC(g.Start), unixUTC(g.End), g.End-g.Start, g.Reason)
	case len(g.GPUs) > 0:
		what = fmt.Sprintf("exporter %s: GPU %s was not open after its restart and not measured", url, joinInts(g.GPUs))
		if len(g.VanishedUUIDs) > 0 {
			what += fmt.Sprintf(" (nor GPU %s, not found after a later restart, whose energy is not in the run's)", strings.Join(g.VanishedUUIDs, ", "))
		}
	}
	return fmt.Sprintf("%s from %s to %s (%.1f s, %s): %s", what, unixUTC(g.Start), unixUTC(g.End), g.End-g.Start, g.Reason, g.energy(gpus))
}

// GPUFailure says the gap is a GPU's failure while the exporter ran
// (contract.GapGPUFailed, GapGPUHung), not a restart.
func (g Gap) GPUFailure() bool {
	return g.Reason == contract.GapGPUFailed || g.Reason == contract.GapGPUHung
}

// Unbridged says some GPU the gap is about (gpus: the run's GPUs) has no
// energy counted over it.
func (g Gap) Unbridged(gpus []GPUInfo) bool {
	for _, gi := range gpus {
		if (len(g.GPUs) == 0 || slices.Contains(g.GPUs, gi.GPU)) && !slices.Contains(g.EnergyBridgedGPUs, gi.GPU) {
			return true
		}
	}
	return false
}

// AllGPUs says the gap is about every GPU of the run (the exporter was
// down), not some of them.
func (g Gap) AllGPUs() bool { return len(g.GPUs) == 0 && len(g.VanishedUUIDs) == 0 }

// Subject names what the gap leaves unmeasured: the exporter at url, or
// its GPUs the gap lists ("<url> gpu 1, 3"; a vanished GPU by UUID).
func (g Gap) Subject(url string) string {
	if g.AllGPUs() {
		return url
	}
	var names []string
	if len(g.GPUs) > 0 {
		names = append(names, joinInts(g.GPUs))
	}
	names = append(names, g.VanishedUUIDs...)
	return url + " gpu " + strings.Join(names, ", ")
}

// energy says what energy the gap's GPUs (those it lists, else every GPU
// of the run) have there: their own counters' (the exporter bridged the
// downtime with them) or none.
func (g Gap) energy(gpus []GPUInfo) string {
	var lost []int
	for _, gi := range gpus {
		if (g.AllGPUs() || slices.Contains(g.GPUs, gi.GPU)) && !slices.Contains(g.EnergyBridgedGPUs, gi.GPU) {
			lost = append(lost, gi.GPU)
		}
	}
	switch {
	case len(g.EnergyBridgedGPUs) == 0:
		return "no energy was measured there"
	case len(lost) == 0:
		return fmt.Sprintf("no power was sampled there, but the GPUs' own energy counters gave the downtime's energy (GPU %s), which the stage energies count",
			joinInts(g.EnergyBridgedGPUs))
	}
	return fmt.Sprintf("no power was sampled there; the downtime's energy of GPU %s came from their own energy counters and is counted, none was measured on GPU %s",
		joinInts(g.EnergyBridgedGPUs), joinInts(lost))
}

// joinInts is "1, 3".
func joinInts(v []int) string {
	s := make([]string, len(v))
	for k, i := range v {
		s[k] = strconv.Itoa(i)
	}
	return strings.Join(s, ", ")
}

func unixUTC(s float64) string {
	return time.Unix(0, int64(s*1e9)).UTC().Format(time.RFC3339Nano)
}
