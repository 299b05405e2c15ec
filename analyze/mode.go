package analyze

import (
	"fmt"
	"strings"

	"github.com/joulemark/joulemark/internal/contract"
	"github.com/joulemark/joulemark/report"
)

// What an attached run does not measure (report.json not_measured): the
// engine was running before the bench and still runs after it.
const (
	NotMeasuredIdleBaseline  = "idle_baseline"  // the GPUs' power with no engine loaded
	NotMeasuredStartup       = "startup"        // energy.startup_joules
	NotMeasuredRelease       = "release"        // energy.release_joules and the release verdict
	NotMeasuredFullLifecycle = "full_lifecycle" // full_lifecycle_joules_per_token, lifecycle_estimate's fixed overhead
)

// attachedNotMeasured is not_measured of an attached run, in report order.
var attachedNotMeasured = []string{NotMeasuredIdleBaseline, NotMeasuredStartup, NotMeasuredRelease, NotMeasuredFullLifecycle}

// Where a run's mode was read (report.json mode_source).
const (
	ModeFromIdentity = "run_identity"  // run.mode, pushed by the bench
	ModeFromPhases   = "phase_markers" // no identity with a mode: only the formal phase was marked
	ModeFromDefault  = "default"       // no identity with a mode, lifecycle phases marked
)

// decideMode sets the report's mode: the run identity's (RunData.RunInfo,
// else RunData.Mode given by the caller from the archive), else attached
// when the formal phase is the only one with a marker (a bench with
// --engine.no-lifecycle before run.mode existed), else lifecycle.
func (c *computation) decideMode() {
	switch {
	case c.d.Mode != "":
		c.r.Mode, c.r.ModeSource = c.d.Mode, ModeFromIdentity
	case c.d.RunInfo != nil && c.d.RunInfo.Mode != "":
		c.r.Mode, c.r.ModeSource = c.d.RunInfo.Mode, ModeFromIdentity
	case c.onlyFormalMarked():
		c.r.Mode, c.r.ModeSource = contract.ModeAttached, ModeFromPhases
	default:
		c.r.Mode, c.r.ModeSource = contract.ModeLifecycle, ModeFromDefault
	}
	if c.attached() {
		c.r.NotMeasured = attachedNotMeasured
	}
}

// onlyFormalMarked reports whether the formal phase has a start and no
// other phase has any marker.
func (c *computation) onlyFormalMarked() bool {
	for _, ph := range contract.Phases {
		name := string(ph)
		b, ok := c.d.Phases[name]
		has := ok && (b.HasStart || b.HasEnd)
		if has != (name == "formal") {
			return false
		}
	}
	return true
}

// attached reports whether the run measured an engine already running.
func (c *computation) attached() bool { return c.r.Mode == contract.ModeAttached }

// expectedPhases are the phases the run's mode marks: the formal phase
// alone for an attached run (with an idle window when the bench took one).
func (c *computation) expectedPhases() []string {
	if c.attached() {
		return []string{string(contract.Formal)}
	}
	names := make([]string, len(contract.Phases))
	for i, p := range contract.Phases {
		names[i] = string(p)
	}
	return names
}

// modeLine is the report header's line on the mode and what it leaves
// unmeasured.
func modeLine(r *report.Report) string {
	if r.Mode != contract.ModeAttached {
		return "Mode: cold-start lifecycle (idle, startup, warm-up, formal, release measured)."
	}
	line := fmt.Sprintf("Mode: attached (the engine was already running): steady-state J/token, throughput, latency, goodput and the server view are measured; not measured: %s. Compare it only on steady-state figures.",
		strings.ReplaceAll(strings.Join(r.NotMeasured, ", "), "_", " "))
	if st, ok := r.Stages["idle"]; ok {
		line += fmt.Sprintf(" The idle stage is a quiet window before the load (bench setting engine.quiet_window), the engine running without load from the bench: %s, its resident power, not the bare GPUs' baseline.",
			num(st.AvgPowerWatts, "%.1f W"))
	}
	return line
}
