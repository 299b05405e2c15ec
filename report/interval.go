package report

// Intervals is report.json "intervals": 95% confidence intervals of the
// headline figures from batch means over time (docs/analyze.md,
// "Confidence intervals"). Each figure's deviation is written as a sum over
// a time grid of the formal stage; the grid is cut into batches sized from
// the series' own correlation (Politis–White), and the interval is the
// figure ± Student's t over the batches.
type Intervals struct {
	Method     string  `json:"method"`
	Confidence float64 `json:"confidence"`
	// BinSeconds is the time grid's bin width, Bins its bins over the
	// formal stage.
	BinSeconds float64 `json:"bin_seconds"`
	Bins       int     `json:"bins"`
	// Reason says why no figure has one (no formal requests).
	Reason string `json:"reason,omitempty"`
	// CI95 maps a figure's report key to its [low, high]; a figure without
	// one says why in Figures.
	CI95 map[string][2]float64 `json:"ci95"`
	// Figures holds, for every figure with an interval key, what its
	// interval covers and how it was found, or why it has none.
	Figures map[string]IntervalFigure `json:"figures"`
}

// IntervalFigure is one figure's interval: its estimand, form and batches,
// or the reason it has none.
type IntervalFigure struct {
	// Estimand is what the interval covers, in words.
	Estimand string `json:"estimand"`
	// Form is how the interval is built from the batches: ratio, mean,
	// wilson (a proportion: Wilson's score interval at the effective sample
	// size), density (a percentile: the proportion's standard error over
	// the density at the percentile) or woodruff (a percentile far in a
	// tail: the interval of the proportion below it, mapped back through
	// the sorted values).
	Form string `json:"form"`
	// Batches of BatchSeconds each; CorrelationSeconds is the series'
	// correlation scale G/g0 (Politis–White's lag window).
	Batches            int     `json:"batches,omitempty"`
	BatchSeconds       float64 `json:"batch_seconds,omitempty"`
	CorrelationSeconds float64 `json:"correlation_seconds,omitempty"`
	// StandardError is the interval's half-width over Student's t
	// quantile at DF = batches − 1 degrees of freedom (what diff tests
	// with).
	StandardError *float64 `json:"standard_error,omitempty"`
	DF            int      `json:"df,omitempty"`
	// Reason says why there is no interval.
	Reason string `json:"reason,omitempty"`
}

// Interval figure keys: the report keys of the figures with an interval.
const (
	KeySteadyJPT     = "steady_state.joules_per_token"
	KeySustainedJPT  = "steady_state.sustained_load_joules_per_token"
	KeyLifecycleJPT  = "full_lifecycle_joules_per_token"
	KeyThroughput    = "throughput_tokens_per_second"
	KeyGoodputRatio  = "goodput.ratio"
	KeyJoulesPerGood = "goodput.joules_per_good_token"
)

// CI95 is the 95% interval of the figure with report key key; false when
// the report has none.
func (r *Report) CI95(key string) (lo, hi float64, ok bool) {
	v, ok := r.Intervals.CI95[key]
	return v[0], v[1], ok
}

// IntervalSE is the standard error and degrees of freedom of the figure's
// interval; false when the report gives none (older reports: diff then
// derives one from CI95).
func (r *Report) IntervalSE(key string) (se float64, df int, ok bool) {
	f, ok := r.Intervals.Figures[key]
	if !ok || f.StandardError == nil || f.DF < 1 {
		return 0, 0, false
	}
	return *f.StandardError, f.DF, true
}
