package runset

import (
	"fmt"
	"strings"

	"github.com/joulemark/joulemark/report"
)

// Direction says which way a metric gets better.
type Direction int

const (
	// Minimize: lower is better (energy, latency).
	Minimize Direction = iota
	// Maximize: higher is better (throughput, goodput).
	Maximize
)

func (d Direction) String() string {
	if d == Maximize {
		return "max"
	}
	return "min"
}

// Better reports whether a is strictly better than b in direction d.
func (d Direction) Better(a, b float64) bool {
	if d == Maximize {
		return a > b
	}
	return a < b
}

// Metric is one figure of a report the choosing commands rank on.
type Metric struct {
	Key   string // the report key it comes from, e.g. "latency.ttft_seconds.p95"
	Label string // short column header
	Unit  string
	Dir   Direction
	value func(*report.Report) *float64
	// plausible bounds the figure: at least lo (more than lo when
	// positive), at most hi; a report outside is refused (Check).
	lo, hi   float64
	positive bool
}

// Check fails when r holds the metric outside what it can be (a negative
// or zero J/token, a ratio above 1, NaN): such a report is impossible and
// would rank first.
func (m Metric) Check(r *report.Report) error {
	v, ok := m.Value(r)
	if !ok || (v >= m.lo && v <= m.hi && (!m.positive || v > m.lo)) {
		return nil
	}
	want := "at least"
	if m.positive {
		want = "more than"
	}
	return fmt.Errorf("%s %g is impossible: want %s %g and at most %g %s", m.Key, v, want, m.lo, m.hi, m.Unit)
}

// Value returns the metric of a report, or false when it is missing.
func (m Metric) Value(r *report.Report) (float64, bool) {
	v := m.value(r)
	if v == nil {
		return 0, false
	}
	return *v, true
}

func f64(v float64) *float64 { return &v }

// The tracked metrics. Steady-state J/token counts only when steady state was
// reached; a figure left in a report whose steady state was not reached is
// treated as missing.
var (
	SteadyStateJPT = Metric{Key: "steady_state.joules_per_token", Label: "ss_J/tok", Unit: "J/token", Dir: Minimize, hi: maxJoulesPerToken, positive: true,
		value: func(r *report.Report) *float64 {
			if !r.SteadyState.Reached {
				return nil
			}
			return r.SteadyState.JoulesPerToken
		}}
	// SustainedLoadJPT is the steady-state J/token without the drain
	// (docs/design.md, "Definitions").
	SustainedLoadJPT = Metric{Key: "steady_state.sustained_load_joules_per_token", Label: "sustained_J/tok", Unit: "J/token", Dir: Minimize, hi: maxJoulesPerToken, positive: true,
		value: func(r *report.Report) *float64 {
			if !r.SteadyState.Reached {
				return nil
			}
			return r.SteadyState.SustainedLoadJoulesPerToken
		}}
	LifecycleJPT = Metric{Key: "full_lifecycle_joules_per_token", Label: "life_J/tok", Unit: "J/token", Dir: Minimize, hi: maxJoulesPerToken, positive: true,
		value: func(r *report.Report) *float64 { return r.FullLifecycleJoulesPerToken }}
	TTFTP95 = Metric{Key: "latency.ttft_seconds.p95", Label: "ttft_p95", Unit: "s", Dir: Minimize, hi: maxSeconds,
		value: func(r *report.Report) *float64 { return r.Latency.TTFTSeconds.P95 }}
	TPOTP95 = Metric{Key: "latency.tpot_seconds.p95", Label: "tpot_p95", Unit: "s", Dir: Minimize, hi: maxSeconds,
		value: func(r *report.Report) *float64 { return r.Latency.TPOTSeconds.P95 }}
	StartupEnergy = Metric{Key: "energy.startup_joules", Label: "startup_J", Unit: "J", Dir: Minimize, hi: maxJoules,
		value: func(r *report.Report) *float64 { return r.Energy.StartupJoules }}
	Throughput = Metric{Key: "throughput_tokens_per_second", Label: "tok/s", Unit: "tokens/s", Dir: Maximize, hi: maxTokensPerSecond,
		value: func(r *report.Report) *float64 { return r.ThroughputTokensPerSecond }}
	Goodput = Metric{Key: "goodput.ratio", Label: "goodput", Unit: "ratio", Dir: Maximize, hi: 1,
		value: func(r *report.Report) *float64 { return r.Goodput.Ratio }}
	ErrorRate = Metric{Key: "requests.error_rate", Label: "err_rate", Unit: "ratio", Dir: Minimize, hi: 1,
		value: func(r *report.Report) *float64 {
			if r.Requests.Started == 0 {
				return nil
			}
			return f64(r.Requests.ErrorRate)
		}}
	// GPUMemoryPeak is the largest single-GPU memory peak of the formal
	// phase: what must fit in one GPU (recommend --max-gpu-memory).
	GPUMemoryPeak = Metric{Key: "gpu_memory.max_gpu_peak_bytes", Label: "gpu_mem_peak", Unit: "bytes", Dir: Minimize, hi: maxBytes,
		value: func(r *report.Report) *float64 {
			if r.GPUMemory == nil {
				return nil
			}
			return r.GPUMemory.MaxGPUPeakBytes
		}}
	// QualityPassRate is the share of checked answers that passed their
	// rubric (recommend --min-quality).
	QualityPassRate = Metric{Key: "quality.pass_rate", Label: "quality", Unit: "ratio", Dir: Maximize, hi: 1,
		value: func(r *report.Report) *float64 {
			if r.Quality == nil {
				return nil
			}
			return r.Quality.PassRate
		}}
	JoulesPerGoodToken = Metric{Key: "goodput.joules_per_good_token", Label: "J/good_tok", Unit: "J/token", Dir: Minimize, hi: maxJoulesPerToken, positive: true,
		value: func(r *report.Report) *float64 { return r.Goodput.JoulesPerGoodToken }}
)

// Plausible bounds of the tracked metrics: far above any real run, far
// below what a corrupted or forged report holds (1e308).
const (
	maxJoulesPerToken  = 1e6  // a megajoule per token
	maxSeconds         = 1e6  // eleven days for one token
	maxJoules          = 1e12 // a terajoule
	maxTokensPerSecond = 1e9
	maxBytes           = 1e15 // a petabyte of GPU memory
)

// CheckedMetrics are the metrics every report the run-set commands read
// is checked against (LoadReport).
var CheckedMetrics = append(DiffMetrics[:len(DiffMetrics):len(DiffMetrics)], GPUMemoryPeak, QualityPassRate)

// ParetoMetrics are the objectives of `joulemark pareto` and `recommend`.
var ParetoMetrics = []Metric{SteadyStateJPT, LifecycleJPT, TTFTP95, TPOTP95, StartupEnergy, Throughput, Goodput}

// DiffMetrics are the metrics `joulemark diff` tracks for regressions.
var DiffMetrics = []Metric{SteadyStateJPT, SustainedLoadJPT, LifecycleJPT, JoulesPerGoodToken, TTFTP95, TPOTP95, StartupEnergy, Throughput, Goodput, ErrorRate}

// MetricByKey finds a tracked metric by its report key or its label.
func MetricByKey(key string) (Metric, error) {
	for _, m := range DiffMetrics {
		if m.Key == key || m.Label == key {
			return m, nil
		}
	}
	var keys []string
	for _, m := range DiffMetrics {
		keys = append(keys, m.Key)
	}
	return Metric{}, fmt.Errorf("unknown metric %q (one of %s)", key, strings.Join(keys, ", "))
}
