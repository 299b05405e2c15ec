package contract

// Why a run ended: the phase API's RunStatus.end_reason. docs/exporter.md
// names each one (checked by a test).
const (
	EndReasonAPI             = "api"               // POST .../end
	EndReasonReleaseClosed   = "release_closed"    // release detection: power back at baseline and held
	EndReasonReleaseTimedOut = "release_timed_out" // the release max wait passed
	EndReasonExpired         = "expired"           // active longer than the exporter's --run.max-age
)

// EndReasons lists every end reason.
var EndReasons = []string{EndReasonAPI, EndReasonReleaseClosed, EndReasonReleaseTimedOut, EndReasonExpired}

// GapExporterRestarted is the reason of a gap in a run while the exporter
// was down: from its last saved state to its restart.
const GapExporterRestarted = "exporter_restarted"

// Gap reasons of a GPU's own gap while the exporter runs: its reads failed
// (an error such as "GPU is lost", Xid 79) or hung (no answer for
// stallIntervals sampling intervals). The gap lasts from the GPU's last
// good sample until it answers again with the same UUID, or until the
// run's end.
const (
	GapGPUFailed = "gpu_failed"
	GapGPUHung   = "gpu_hung"
)

// GapReasons lists every gap reason.
var GapReasons = []string{GapExporterRestarted, GapGPUFailed, GapGPUHung}
