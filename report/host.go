package report

// Host energy (RAPL powercap zones read by the exporter) beside the GPUs'.
const (
	// ReasonHostNotExported: the run's exporters published no host energy
	// metric at all (host metering off, or an older exporter).
	ReasonHostNotExported = "not_exported"
	// HostBoundary is what host energy covers.
	HostBoundary = "host CPU packages and DRAM (RAPL package-* and dram zones); no PSU loss, fans, NICs or disks"
)

// HostEnergy is report.json "host_energy". When the host energy is
// unavailable every figure is null and Reason says why; never 0.
type HostEnergy struct {
	Available bool     `json:"available"`
	Reason    string   `json:"reason,omitempty"` // no_rapl, permission_denied, read_error, not_exported
	Message   string   `json:"message,omitempty"`
	Boundary  string   `json:"boundary"`
	Zones     []string `json:"zones,omitempty"`
	// Stages is the host energy per lifecycle phase (null where missing).
	Stages          map[string]*float64 `json:"stages"`
	StartupJoules   *float64            `json:"startup_joules"`
	FormalJoules    *float64            `json:"formal_joules"`
	ReleaseJoules   *float64            `json:"release_joules"`
	LifecycleJoules *float64            `json:"lifecycle_joules"`
	// SteadyStateJoules is the host energy over the steady-state span,
	// from its counters.
	SteadyStateJoules *float64 `json:"steady_state_joules"`
	// GPU+host J/token on both bases, and tokens per joule both ways
	// (steady state; GPU only and GPU+host).
	GPUPlusHostSteadyStateJoulesPerToken   *float64 `json:"gpu_plus_host_steady_state_joules_per_token"`
	GPUPlusHostFullLifecycleJoulesPerToken *float64 `json:"gpu_plus_host_full_lifecycle_joules_per_token"`
	TokensPerJouleGPU                      *float64 `json:"tokens_per_joule_gpu"`
	TokensPerJouleGPUPlusHost              *float64 `json:"tokens_per_joule_gpu_plus_host"`
}
