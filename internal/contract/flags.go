package contract

// Report flags: analyze's validity flags (report.json "flags"; docs/analyze.md,
// "Flags", checked both ways by a test).
const (
	FlagReleaseNotClosed      = "release_not_closed"
	FlagSteadyStateNotReach   = "steady_state_not_reached"
	FlagIdleUnstable          = "idle_unstable"
	FlagTooFewRequests        = "too_few_requests"
	FlagErrorRateHigh         = "error_rate_high"
	FlagEnergySourcesDisagree = "energy_sources_disagree"
	FlagCoverageLow           = "coverage_low"
	FlagPhaseMissing          = "phase_missing"
	FlagRequestsIncomplete    = "request_samples_incomplete"
	FlagNoEnergyData          = "energy_missing"
	// FlagPrometheusValuesInvalid: Prometheus answered values that cannot
	// be (NaN, ±Inf, a negative energy): they were left out.
	FlagPrometheusValuesInvalid = "prometheus_values_invalid"
	// FlagRequestsArchiveMismatch: Prometheus' per-request samples disagree
	// with the run's archive (a remote-write receiver dropped some): the
	// requests come from the archive.
	FlagRequestsArchiveMismatch = "requests_archive_mismatch"
	// FlagKilled: the run's archive says its bench died (runs finalize
	// ended it): the formal phase ends at its last request. An aborted
	// run (Ctrl-C) gets FlagAborted the same way.
	FlagKilled = "killed"
	// FlagRunIDReused: more than one lifecycle under one run id (a phase
	// started twice, phases out of order): the figures would mix runs.
	FlagRunIDReused = "run_id_reused"
	// FlagQualityLow: the answers' pass rate is under the threshold; the run is
	// excluded so a fast but degraded endpoint is never ranked.
	FlagQualityLow = "quality_low"
	// FlagReleaseProcessUnverified warns (without excluding the run) that an
	// exporter met the release's process criterion without evidence: none of
	// the run's GPUs could list its processes and the bench did not report the
	// engine's exit.
	FlagReleaseProcessUnverified = "release_process_unverified"
	// FlagExporterRestarted warns (without excluding the run) that an exporter
	// was down during the run: phases.json of the bench archive holds its gap,
	// an interval without energy. Coverage counts the hole the scrapes show.
	FlagExporterRestarted = "exporter_restarted"
	// FlagGPUFailed: one of the run's GPUs stopped answering while the
	// exporter ran (its reads failed or hung: a gap of its own, reason
	// GapGPUFailed or GapGPUHung, in phases.json). It excludes the run when
	// the gap overlaps the formal phase and the GPU's own counter did not
	// bridge it (the formal energy misses it); else it warns.
	FlagGPUFailed = "gpu_failed"
	// FlagGPUShared excludes a run whose GPUs another pod held at some
	// moment of the run (the exporter's co_tenants: besides the run's pod,
	// or any pod once two held the GPUs of a run not selected by pod):
	// their energy is in the run's.
	FlagGPUShared = "gpu_shared"
	// FlagOutputsSuspect warns (without excluding the run) that the share of
	// empty, repeated or short outputs exceeds Params.MaxBadOutputRatio.
	FlagOutputsSuspect = "outputs_suspect"
	// FlagScrapeCoverageLow: a series Prometheus only scrapes (the engine's
	// metrics, GPU memory, GPU utilization) misses more of the formal phase
	// than --min-coverage allows, e.g. Prometheus was down: the server view,
	// GPU memory and the diagnosis built on them come from the samples present
	// (null where none). A warning: stage energy, J/token, requests and
	// latency come from the exporter's and the bench's pushed samples and the
	// exporter's phase figures, which `joulemark runs push` and the exporter's
	// remote-write retries restore after an outage; scrapes are lost for good.
	FlagScrapeCoverageLow = "scrape_coverage_low"
	// FlagServerTokensMismatch: the engine counted fewer output tokens than
	// the client (warning).
	FlagServerTokensMismatch = "server_tokens_mismatch"
	// FlagEngineShared: the engine generated more output tokens over the
	// formal phase than the bench counted, beyond the tolerance: other
	// traffic shared the engine and its energy (excluding).
	FlagEngineShared = "engine_shared"
)

// Bench flags: the benchmark job's run flags (manifest.json "flags";
// docs/bench.md). release_not_closed and exporter_restarted are the report's.
const (
	// FlagExporterLostPhases: an exporter's final status lacks a phase the
	// bench posted (it restarted without its state, or a POST never got
	// through): the run's energy cannot be trusted.
	FlagExporterLostPhases = "exporter_lost_phases"
	// FlagRetryAfter: the engine answered 429 or 503 with Retry-After, and
	// the load paused as asked (retry_after_wait_seconds in the manifest).
	FlagRetryAfter      = "retry_after"
	FlagAborted         = "aborted"                  // Ctrl-C (context canceled): records kept
	FlagNoLifecycle     = "no_lifecycle"             // an already running service: formal phase only
	FlagUsageMissing    = "usage_missing"            // the stream carried no usage: see tokens_source
	FlagClientLag       = "client_could_not_keep_up" // open-loop dispatch lag above max_lag
	FlagClientCPU       = "client_cpu_saturated"     // the client used over 90% of its CPUs
	FlagEngineStart     = "engine_start_failed"
	FlagEngineNotReady  = "engine_not_ready"     // readiness timeout passed
	FlagEngineExited    = "engine_exited"        // the engine process died before it was stopped
	FlagEngineStop      = "engine_stop_failed"   // stop hook failed or SIGKILL was needed
	FlagWrongModel      = "wrong_model"          // the served model is not the one asked for
	FlagReleaseWait     = "release_wait_timeout" // the client gave up waiting for an exporter
	FlagExporterError   = "exporter_error"       // a phase could not be posted to an exporter
	FlagRemoteWriteLost = "remote_write_lost"    // some samples never reached Prometheus
	FlagTraceExhausted  = "trace_exhausted"      // the trace ended before requests/duration
	// FlagEngineMetricsInvalid: the engine's /metrics answered a NaN or
	// infinite sample for a cross-check metric; that metric was left out of
	// those scrapes in engine_metrics.jsonl (the engine view is incomplete).
	FlagEngineMetricsInvalid = "engine_metrics_invalid"
)

// ClientCPUSaturated is the client's CPU use over the formal phase (its
// CPU time over wall time and usable CPUs) above which the bench flags
// FlagClientCPU and the diagnosis calls the run client-bound.
const ClientCPUSaturated = 0.9

// ReportFlags are every report flag code.
var ReportFlags = []string{FlagReleaseNotClosed, FlagSteadyStateNotReach, FlagIdleUnstable, FlagTooFewRequests, FlagErrorRateHigh, FlagEnergySourcesDisagree, FlagCoverageLow, FlagPhaseMissing, FlagRequestsIncomplete, FlagNoEnergyData, FlagPrometheusValuesInvalid, FlagRequestsArchiveMismatch, FlagKilled, FlagAborted, FlagRunIDReused, FlagQualityLow, FlagReleaseProcessUnverified, FlagExporterRestarted, FlagGPUFailed, FlagGPUShared, FlagOutputsSuspect, FlagScrapeCoverageLow, FlagServerTokensMismatch, FlagEngineShared}

// BenchFlags are every bench flag code.
var BenchFlags = []string{FlagExporterLostPhases, FlagExporterRestarted, FlagGPUFailed, FlagRetryAfter, FlagAborted, FlagNoLifecycle, FlagUsageMissing, FlagClientLag, FlagClientCPU, FlagEngineStart, FlagEngineNotReady, FlagEngineExited, FlagEngineStop, FlagWrongModel, FlagReleaseNotClosed, FlagReleaseWait, FlagExporterError, FlagRemoteWriteLost, FlagTraceExhausted, FlagEngineMetricsInvalid}
