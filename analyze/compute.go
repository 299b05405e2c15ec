package analyze

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"
)

// Params are the definitions' knobs (DESIGN.md, "Definitions").
type Params struct {
	SLOTTFT   time.Duration // 0: no TTFT SLO
	SLOTPOT   time.Duration // 0: no TPOT SLO
	SSWindow  int           // requests per window (100)
	SSWindows int           // consecutive windows (3)
	SSCV      float64       // CV threshold (0.03)

	MaxErrorRate    float64 // formal error rate above which the run is flagged (0.05)
	MinCoverage     float64 // sample coverage below which the run is flagged (0.95)
	EnergyTolerance float64 // relative disagreement of the two stage energies flagged (0.01)
	IdleMaxCV       float64 // per-GPU idle power CV above which idle is unstable (0.05)
	// MaxBadOutputRatio: share of empty, repeated or short outputs above
	// which the run is flagged outputs_suspect (0.05); used only when the
	// bench archive is given (Config.Archive).
	MaxBadOutputRatio float64
}

// DefaultParams are the documented defaults.
func DefaultParams() Params {
	return Params{
		SLOTTFT: 500 * time.Millisecond, SLOTPOT: 35 * time.Millisecond,
		SSWindow: 100, SSWindows: 3, SSCV: 0.03,
		MaxErrorRate: 0.05, MinCoverage: 0.95, EnergyTolerance: 0.01, IdleMaxCV: 0.05,
		MaxBadOutputRatio: 0.05,
	}
}

// Validate checks the parameters before any work starts.
func (p Params) Validate() error {
	switch {
	case p.SLOTTFT < 0 || p.SLOTPOT < 0:
		return fmt.Errorf("SLOs must not be negative (ttft %v, tpot %v)", p.SLOTTFT, p.SLOTPOT)
	case p.SSWindow < 2:
		return fmt.Errorf("steady-state window must hold at least 2 requests, got %d", p.SSWindow)
	case p.SSWindows < 1:
		return fmt.Errorf("steady-state window count must be at least 1, got %d", p.SSWindows)
	case !(p.SSCV > 0):
		return fmt.Errorf("steady-state CV threshold must be > 0, got %g", p.SSCV)
	case p.MaxErrorRate < 0 || p.MaxErrorRate > 1:
		return fmt.Errorf("max error rate must be in [0,1], got %g", p.MaxErrorRate)
	case p.MinCoverage < 0 || p.MinCoverage > 1:
		return fmt.Errorf("min coverage must be in [0,1], got %g", p.MinCoverage)
	case p.MaxBadOutputRatio < 0 || p.MaxBadOutputRatio > 1:
		return fmt.Errorf("max bad output ratio must be in [0,1], got %g", p.MaxBadOutputRatio)
	case p.EnergyTolerance <= 0:
		return fmt.Errorf("energy tolerance must be > 0, got %g", p.EnergyTolerance)
	}
	return nil
}

// Flag codes.
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
)

// Boundary is the measurement boundary every figure carries.
const Boundary = "GPU board energy only"

// PlotData is what the HTML report plots besides the report itself.
type PlotData struct {
	Power          []PowerSeries
	Phases         []PhaseBand
	JoulesPerToken []float64 // successful formal requests in completion order
	SteadyFirst    int       // index into JoulesPerToken, -1 when not reached
	TTFT, TPOT     []float64 // seconds, successful formal requests
}

// PowerSeries is one GPU's power samples.
type PowerSeries struct {
	Label string
	T, W  []float64
}

// PhaseBand is one phase's span.
type PhaseBand struct {
	Name       string
	Start, End float64
}

// Compute derives the report from the run's data. It never fails on data
// quality: what cannot be computed is null and flagged; the error is for
// misuse (invalid parameters, no data at all).
func Compute(d *RunData, p Params) (*Report, *PlotData, error) {
	if err := p.Validate(); err != nil {
		return nil, nil, err
	}
	r := &Report{RunID: d.RunID, Stages: map[string]Stage{}, Flags: []Flag{}}
	pd := &PlotData{SteadyFirst: -1}
	flag := func(code string, excluding bool, format string, a ...any) {
		r.Flags = append(r.Flags, Flag{Code: code, Message: fmt.Sprintf(format, a...), Excluding: excluding})
	}

	// Run span: first phase start to last phase end.
	spanFrom, spanTo := math.Inf(1), math.Inf(-1)
	var missing []string
	for _, name := range phaseNames {
		b, ok := d.Phases[name]
		if !ok || !b.HasStart || !b.HasEnd || b.End < b.Start {
			missing = append(missing, name)
			continue
		}
		spanFrom, spanTo = min(spanFrom, b.Start), max(spanTo, b.End)
		pd.Phases = append(pd.Phases, PhaseBand{name, b.Start, b.End})
	}
	if len(missing) == len(phaseNames) {
		return nil, nil, fmt.Errorf("run %q has no complete phase (no start and end timestamps)", d.RunID)
	}
	if len(missing) > 0 {
		flag(FlagPhaseMissing, true, "phases without both boundaries: %s", strings.Join(missing, ", "))
	}

	// Counter curves. The extrapolation tolerance is two sample intervals.
	interval := math.NaN()
	var intervals []float64
	for _, g := range d.GPUs {
		if m := medianInterval(g.Energy); !math.IsNaN(m) {
			intervals = append(intervals, m)
		}
	}
	if len(intervals) > 0 {
		slices.Sort(intervals)
		interval = median(intervals)
	}
	tol := 0.0
	if !math.IsNaN(interval) {
		tol = 2 * interval
	}
	curves := make([]curve, len(d.GPUs))
	for i, g := range d.GPUs {
		curves[i] = newCurve(g.Energy, tol)
	}
	if len(d.GPUs) == 0 {
		flag(FlagNoEnergyData, true, "no GPU energy counter series for the run")
	}

	// Measurement.
	r.Measurement.Boundary = Boundary
	r.Measurement.SampleIntervalSeconds = finite(interval)
	r.Measurement.GPUs = len(d.GPUs)
	srcs := map[string]bool{}
	for _, g := range d.GPUs {
		if g.EnergySource != "" {
			srcs[g.EnergySource] = true
		}
	}
	r.Measurement.EnergySource = strings.Join(sortedKeys(srcs), ",")
	if len(d.GPUs) > 0 && spanTo > spanFrom {
		cov := 1.0
		for _, g := range d.GPUs {
			for _, s := range []struct {
				name string
				ss   []Sample
			}{{"energy", g.Energy}, {"power", g.Power}} {
				c, gaps := coverage(s.ss, spanFrom, spanTo, medianInterval(s.ss))
				cov = min(cov, c)
				for _, gp := range gaps {
					r.Measurement.Gaps = append(r.Measurement.Gaps, Gap{GPU: g.Label(), Series: s.name, Start: gp[0], End: gp[1]})
				}
			}
		}
		r.Measurement.CoverageRatio = &cov
		if cov < p.MinCoverage {
			flag(FlagCoverageLow, true, "sample coverage %.3f is under %.3f (%d gaps)", cov, p.MinCoverage, len(r.Measurement.Gaps))
		}
	}

	// Stage energy, both ways.
	var disagree []string
	for _, name := range phaseNames {
		b, ok := d.Phases[name]
		if !ok || !b.HasStart || !b.HasEnd || b.End < b.Start {
			continue
		}
		st := Stage{Start: b.Start, End: b.End, DurationSeconds: b.End - b.Start}
		unc := 0.0 // how far sampling resolution alone can move the counter figure
		if len(curves) > 0 {
			sum, allOK := 0.0, true
			for i, cv := range curves {
				e, ok := cv.between(b.Start, b.End)
				sum += e
				allOK = allOK && ok
				stale := d.SamplerIntervalSeconds
				if d.GPUs[i].EnergyRaw {
					stale = 0 // the exporter's own sample timestamps
				}
				// A counter read up to stale seconds before its timestamp
				// shifts each boundary by up to that much of its power.
				unc += cv.uncertainty(b.Start) + cv.uncertainty(b.End) + stale*math.Max(cv.powerAt(b.Start), cv.powerAt(b.End))
			}
			if allOK {
				st.CounterEnergyJoules = ptr(sum)
			}
		}
		if e, ok := d.PhaseEnergy[name]; ok {
			st.ExporterEnergyJoules = ptr(e)
		}
		// The exporter's figure integrates its high-rate samples exactly
		// at the boundaries; the counter Prometheus holds is as fine as
		// its scrape (or raw-push) interval. The finer one is the stage
		// energy, the other the cross-check.
		st.EnergyJoules = st.ExporterEnergyJoules
		if st.EnergyJoules == nil {
			st.EnergyJoules = st.CounterEnergyJoules
		}
		if c, e := st.CounterEnergyJoules, st.ExporterEnergyJoules; c != nil && e != nil {
			if m := math.Max(math.Abs(*c), math.Abs(*e)); m > 0 {
				rel := math.Abs(*c-*e) / m
				st.EnergyDisagreementRatio = ptr(rel)
				// Sources disagree when they differ by more than the
				// tolerance AND more than the counter's sampling
				// resolution at the two boundaries can explain.
				if rel > p.EnergyTolerance && math.Abs(*c-*e) > unc {
					disagree = append(disagree, fmt.Sprintf("%s %.1f%% (counter %.1f J, exporter %.1f J, sampling resolution explains ±%.1f J)", name, 100*rel, *c, *e, unc))
				}
				if unc > 0 {
					st.CounterResolutionJoules = ptr(unc)
				}
			}
		}
		if st.EnergyJoules != nil && st.DurationSeconds > 0 {
			st.AvgPowerWatts = ptr(*st.EnergyJoules / st.DurationSeconds)
		}
		r.Stages[name] = st
	}
	if len(disagree) > 0 {
		flag(FlagEnergySourcesDisagree, true, "counter and exporter stage energies differ by more than %g%%: %s", 100*p.EnergyTolerance, strings.Join(disagree, "; "))
	}
	stageE := func(name string) *float64 { return r.Stages[name].EnergyJoules }
	r.Energy.StartupJoules = sumPtr(stageE("startup"), stageE("warmup"))
	r.Energy.FormalJoules = stageE("formal")
	r.Energy.ReleaseJoules = stageE("release")
	r.Energy.LifecycleJoules = sumPtr(r.Energy.StartupJoules, r.Energy.FormalJoules, r.Energy.ReleaseJoules)

	// Release.
	if d.ReleaseClosed != nil && *d.ReleaseClosed {
		r.Release.Closed = true
	} else {
		why := "the exporter reported that power did not return to the idle baseline within the maximum wait"
		if d.ReleaseClosed == nil {
			why = "no joulemark_run_release_closed sample for the run"
		}
		flag(FlagReleaseNotClosed, true, "release not closed: %s", why)
	}

	// Idle stability.
	if b, ok := d.Phases["idle"]; ok && b.HasStart && b.HasEnd {
		var unstable []string
		for _, g := range d.GPUs {
			var w []float64
			for _, s := range g.Power {
				if s.T >= b.Start && s.T < b.End {
					w = append(w, s.V)
				}
			}
			if len(w) < 2 {
				continue
			}
			if cv := windowCV(w, len(w))[0]; cv > p.IdleMaxCV {
				unstable = append(unstable, fmt.Sprintf("%s CV %.3f", g.Label(), cv))
			}
		}
		if len(unstable) > 0 {
			flag(FlagIdleUnstable, false, "idle power varies more than CV %g: %s", p.IdleMaxCV, strings.Join(unstable, ", "))
		}
	}
	if d.IncompleteRequests > 0 {
		flag(FlagRequestsIncomplete, true, "%d per-request sample groups lack latency, output tokens or success and were left out", d.IncompleteRequests)
	}

	// Requests: formal ones, in completion order.
	// formal holds indexes into d.Requests, in completion order.
	reqs := d.Requests
	formal := make([]int, 0, len(reqs))
	for i, q := range reqs {
		if q.Phase == "formal" {
			formal = append(formal, i)
		}
	}
	slices.SortFunc(formal, func(i, j int) int {
		a, b := &reqs[i], &reqs[j]
		if c := cmp.Compare(a.End, b.End); c != 0 {
			return c
		}
		if c := cmp.Compare(a.Send, b.Send); c != 0 {
			return c
		}
		if c := cmp.Compare(a.Slot, b.Slot); c != 0 {
			return c
		}
		return cmp.Compare(i, j)
	})
	r.Requests.Started = len(formal)
	var ttfts, tpots, lats []float64
	var goodTokens int64
	for _, i := range formal {
		q := &reqs[i]
		if !q.Success {
			r.Requests.Failed++
			ttfts = append(ttfts, math.Inf(1))
			tpots = append(tpots, math.Inf(1))
			lats = append(lats, math.Inf(1))
			continue
		}
		r.Requests.Succeeded++
		r.Tokens.FormalOutput += q.OutputTokens
		r.Tokens.FormalInput += q.InputTokens
		lats = append(lats, q.Latency)
		good := true
		if q.HasTTFT {
			ttfts = append(ttfts, q.TTFT)
			pd.TTFT = append(pd.TTFT, q.TTFT)
			if p.SLOTTFT > 0 && q.TTFT > p.SLOTTFT.Seconds() {
				good = false
			}
		} else if p.SLOTTFT > 0 {
			good = false
		}
		if t, ok := tpot(*q); ok {
			tpots = append(tpots, t)
			pd.TPOT = append(pd.TPOT, t)
			if p.SLOTPOT > 0 && t > p.SLOTPOT.Seconds() {
				good = false
			}
		}
		if good {
			r.Goodput.GoodRequests++
			goodTokens += q.OutputTokens
		}
	}
	if r.Requests.Started > 0 {
		r.Requests.ErrorRate = float64(r.Requests.Failed) / float64(r.Requests.Started)
		if r.Requests.ErrorRate > p.MaxErrorRate {
			flag(FlagErrorRateHigh, true, "error rate %.2f%% is over %.2f%% (%d of %d formal requests failed)", 100*r.Requests.ErrorRate, 100*p.MaxErrorRate, r.Requests.Failed, r.Requests.Started)
		}
	}
	r.Latency.FailedRequests = r.Requests.Failed
	r.Latency.TTFTSeconds = percentiles(ttfts)
	r.Latency.TPOTSeconds = percentiles(tpots)
	r.Latency.LatencySeconds = percentiles(lats)

	if p.SLOTTFT > 0 {
		r.Goodput.TTFTSLOSeconds = ptr(p.SLOTTFT.Seconds())
	}
	if p.SLOTPOT > 0 {
		r.Goodput.TPOTSLOSeconds = ptr(p.SLOTPOT.Seconds())
	}
	if r.Requests.Started > 0 {
		r.Goodput.Ratio = ptr(float64(r.Goodput.GoodRequests) / float64(r.Requests.Started))
	}
	if r.Energy.FormalJoules != nil && goodTokens > 0 {
		r.Goodput.JoulesPerGoodToken = ptr(*r.Energy.FormalJoules / float64(goodTokens))
	}

	if fb, ok := d.Phases["formal"]; ok && fb.HasStart && fb.HasEnd && fb.End > fb.Start {
		dur := fb.End - fb.Start
		r.ThroughputTokensPerSecond = ptr(float64(r.Tokens.FormalOutput) / dur)
		if r.Energy.FormalJoules != nil {
			r.AvgGPUPowerWatts = ptr(*r.Energy.FormalJoules / dur)
		}
	}
	if r.Energy.LifecycleJoules != nil && r.Tokens.FormalOutput > 0 {
		r.FullLifecycleJoulesPerToken = ptr(*r.Energy.LifecycleJoules / float64(r.Tokens.FormalOutput))
	}

	// Per-request attribution over the formal stage (or the requests' span
	// when the formal boundaries are missing).
	r.SteadyState.Window, r.SteadyState.Windows, r.SteadyState.CVThreshold = p.SSWindow, p.SSWindows, p.SSCV
	from, to := math.Inf(1), math.Inf(-1)
	if fb, ok := d.Phases["formal"]; ok && fb.HasStart && fb.HasEnd {
		from, to = fb.Start, fb.End
	}
	for _, i := range formal {
		from, to = min(from, reqs[i].Send), max(to, reqs[i].End)
	}
	var ss []int // indexes into reqs of the successful formal requests with tokens, in completion order
	for _, i := range formal {
		if reqs[i].Success && reqs[i].OutputTokens > 0 {
			ss = append(ss, i)
		}
	}
	if succ := len(ss); succ < 2*p.SSWindow {
		flag(FlagTooFewRequests, true, "%d successful formal requests with output tokens, fewer than two steady-state windows (%d)", succ, 2*p.SSWindow)
	}
	switch {
	case len(formal) == 0:
		r.SteadyState.Reason = "no formal requests"
	case len(curves) == 0 || !(to > from):
		r.SteadyState.Reason = "no energy data over the formal stage"
	default:
		// All requests of the run compete for the formal stage's energy
		// (a warm-up straggler is active too).
		at := attribute(reqs, curves, from, to)
		r.UnattributedJoules = ptr(at.Unattributed)
		jpt := make([]float64, len(ss))
		for j, i := range ss {
			jpt[j] = at.Joules[i] / float64(reqs[i].OutputTokens)
		}
		pd.JoulesPerToken = jpt
		first, reason := steadyStart(jpt, p.SSWindow, p.SSWindows, p.SSCV)
		if first < 0 {
			r.SteadyState.Reason = reason
			break
		}
		r.SteadyState.Reached = true
		pd.SteadyFirst = first
		last := len(ss) - 1
		r.SteadyState.FirstRequest, r.SteadyState.LastRequest = ptr(first), ptr(last)
		var e float64
		var tok int64
		for _, i := range ss[first:] {
			e += at.Joules[i]
			tok += reqs[i].OutputTokens
		}
		r.SteadyState.Start = ptr(reqs[ss[first]].Send)
		r.SteadyState.End = ptr(reqs[ss[last]].End)
		r.SteadyState.EnergyJoules = ptr(e)
		r.SteadyState.OutputTokens = ptr(tok)
		r.SteadyState.JoulesPerToken = ptr(e / float64(tok))
		r.SteadyState.Requests = ptr(len(ss) - first)
	}
	if !r.SteadyState.Reached {
		flag(FlagSteadyStateNotReach, true, "steady state not reached: %s", r.SteadyState.Reason)
	}

	// Lifecycle estimate E(N) = E_start + N·e_ss + E_release.
	if fixed := sumPtr(r.Energy.StartupJoules, r.Energy.ReleaseJoules); fixed != nil {
		r.LifecycleEstimate.FixedOverheadJoules = fixed
		if n := r.Requests.Started; n > 0 {
			r.LifecycleEstimate.Requests = n
			r.LifecycleEstimate.FixedOverheadPerRequestJoules = ptr(*fixed / float64(n))
		}
	}
	if r.SteadyState.Reached && *r.SteadyState.Requests > 0 {
		r.LifecycleEstimate.PerRequestJoules = ptr(*r.SteadyState.EnergyJoules / float64(*r.SteadyState.Requests))
	}

	// Power per GPU for the plot.
	for _, g := range d.GPUs {
		ps := PowerSeries{Label: g.Label()}
		for _, s := range g.Power {
			ps.T = append(ps.T, s.T)
			ps.W = append(ps.W, s.V)
		}
		pd.Power = append(pd.Power, ps)
	}

	r.Valid = true
	for _, f := range r.Flags {
		if f.Excluding {
			r.Valid = false
		}
	}
	return r, pd, nil
}

func ptr[T any](v T) *T { return &v }

// sumPtr adds the values; nil when any is nil.
func sumPtr(vs ...*float64) *float64 {
	s := 0.0
	for _, v := range vs {
		if v == nil {
			return nil
		}
		s += *v
	}
	return &s
}

func sortedKeys(m map[string]bool) []string {
	k := make([]string, 0, len(m))
	for s := range m {
		k = append(k, s)
	}
	sort.Strings(k)
	return k
}
