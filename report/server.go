package report

// Stat is a mean and a maximum over the formal phase.
type Stat struct {
	Mean *float64 `json:"mean"`
	Max  *float64 `json:"max"`
	// First and last third of the formal phase: the trend.
	FirstThirdMean *float64 `json:"first_third_mean"`
	LastThirdMean  *float64 `json:"last_third_mean"`
}

// Server is report.json "server": the engine's view of the formal phase.
type Server struct {
	Available bool   `json:"available"`
	Reason    string `json:"reason,omitempty"`
	Engine    string `json:"engine,omitempty"` // vllm or sglang, from the names found
	Selector  string `json:"selector"`
	// MetricsFound lists the engine metric names present, by role.
	MetricsFound map[string]string `json:"metrics_found"`
	Running      Stat              `json:"running"`
	Waiting      Stat              `json:"waiting"`
	KVCache      Stat              `json:"kv_cache_usage_ratio"`
	Preemptions  *float64          `json:"preemptions"`
	// OutputTokens is the engine's generation token counter's increase over
	// the formal phase; ClientOutputTokens the client's (successful formal
	// requests); TokenDifferenceRatio (server − client) / client.
	OutputTokens         *float64 `json:"output_tokens"`
	ClientOutputTokens   int64    `json:"client_output_tokens"`
	TokenDifferenceRatio *float64 `json:"token_difference_ratio"`
	// OutputTokensResolution bounds how far the server figure can be off
	// from scrape resolution alone: the counter's increase over the scrape
	// intervals holding the formal phase's two boundaries. A difference
	// within it is not flagged. Nil when a boundary lies outside the
	// engine's scrapes (stopped before its next one): the counter is then
	// bounded on one side only.
	OutputTokensResolution *float64 `json:"output_tokens_resolution"`
	// GPUUtilization is the exporter's joulemark_gpu_utilization_ratio,
	// mean over the run's GPUs.
	GPUUtilization Stat `json:"gpu_utilization_ratio"`
}
