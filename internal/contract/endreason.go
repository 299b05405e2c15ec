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
