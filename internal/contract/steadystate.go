package contract

// The steady-state test's defaults (analyze --steady-state.*, report
// steady_state): windows of SteadyStateWindow formal requests, the last
// SteadyStateWindows of them each with a CV of J/token under
// SteadyStateCV. The bench sizes its default load and its warnings by them.
const (
	SteadyStateWindow  = 100
	SteadyStateWindows = 3
	SteadyStateCV      = 0.03
)

// The steady-state test's weightings of a request in a window's CV
// (--steady-state.weighting, report steady_state.weighting).
const (
	// SteadyWeightTokens weighs each request by its output tokens, as the
	// steady-state figure (energy / tokens) does: the default.
	SteadyWeightTokens = "tokens"
	// SteadyWeightRequests weighs every request alike: the design card's
	// original test, which a short request's attribution noise dominates.
	SteadyWeightRequests = "requests"
)
