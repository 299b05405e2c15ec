package runset

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/joulemark/joulemark/internal/contract"
	"github.com/joulemark/joulemark/report"
	"github.com/joulemark/joulemark/report/outputsanity"
)

// AgreementBound is the method's ±20% comparability bound, which it
// states for formal output tokens (|a−b|/max); repetitions agree when their
// formal output tokens pass it and each one's steady-state J/token lies
// within ±20% of the repetitions' median.
const AgreementBound = 0.20

// IntervalMinMax names the interval shown across repetitions: their
// smallest and largest value. With the 2 to 5 repetitions usual for cold
// lifecycles no distribution-free 95% interval of the median exists (it
// needs 6), so the range is shown with the confidence it has as an
// interval of the median, 1 − 2^(1−n) (IntervalCoverage).
const IntervalMinMax = "min-max"

// IntervalCoverage is the probability that the range of n independent
// repetitions holds the median of their distribution: 0.5 at 2, 0.75 at
// 3, 0.875 at 4, 0.9375 at 5, 0.969 at 6.
func IntervalCoverage(n int) float64 {
	if n < 2 {
		return 0
	}
	return 1 - math.Pow(2, float64(1-n))
}

// RepetitionPool is the repetitions of one configuration: runs sharing
// run.repetition_group and every other identity key but run_id and
// repetition (contract.RunIdentity.Configuration). Only its valid runs are pooled;
// the invalid ones are counted.
type RepetitionPool struct {
	Group   string // run.repetition_group
	Name    string // Group, followed by how its identity differs when the group id holds several
	Planned int    // run.repetitions: how many the group was run with
	Runs    []*Run // every repetition given, input order
	Valid   []*Run // those that passed validation

	identity contract.RunIdentity // the configuration the runs share
}

// Pooled is a metric across a pool's valid repetitions that have it: their
// median and range.
type Pooled struct {
	Median float64 `json:"median"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
	N      int     `json:"n"`
}

// Pool returns the metric across the valid repetitions; false when none
// has it.
func (p *RepetitionPool) Pool(m Metric) (Pooled, bool) {
	var xs []float64
	for _, r := range p.Valid {
		if v, ok := m.Value(&r.Report); ok {
			xs = append(xs, v)
		}
	}
	if len(xs) == 0 {
		return Pooled{}, false
	}
	slices.Sort(xs)
	n := len(xs)
	med := xs[n/2]
	if n%2 == 0 {
		med = (xs[n/2-1] + xs[n/2]) / 2
	}
	return Pooled{Median: med, Min: xs[0], Max: xs[n-1], N: n}, true
}

// poolRepetitions finds the repetition pools among runs, in order of first
// appearance; runs that are no repetition (no run.repetition_group) are in
// none. A group id whose runs differ in identity gives one pool per
// identity, never one across them.
func poolRepetitions(runs []*Run) []*RepetitionPool {
	var pools []*RepetitionPool
	byKey := map[string]*RepetitionPool{}
	identities := map[string][]contract.RunIdentity{}
	for _, r := range runs {
		if r.Report.Run == nil || r.Report.Run.RepetitionGroup == "" {
			continue
		}
		cfg := r.Report.Run.Configuration()
		cfg.Mode = r.Mode()
		b, _ := json.Marshal(cfg)
		p := byKey[string(b)]
		if p == nil {
			p = &RepetitionPool{Group: cfg.RepetitionGroup, Name: cfg.RepetitionGroup, identity: cfg}
			byKey[string(b)] = p
			pools = append(pools, p)
			identities[p.Group] = append(identities[p.Group], cfg)
		}
		p.Runs = append(p.Runs, r)
		p.Planned = max(p.Planned, cfg.Repetitions)
		if r.InvalidReason() == "" {
			p.Valid = append(p.Valid, r)
		}
	}
	for _, p := range pools {
		if ids := identities[p.Group]; len(ids) > 1 {
			p.Name += " [" + identityDiff(p.identity, ids) + "]"
		}
	}
	return pools
}

// identityDiff is "key=value ..." over the identity fields (report keys
// run.*) in which id differs from any of ids.
func identityDiff(id contract.RunIdentity, ids []contract.RunIdentity) string {
	flat := func(i contract.RunIdentity) map[string]any {
		var m map[string]any
		b, _ := json.Marshal(i)
		_ = json.Unmarshal(b, &m)
		return m
	}
	mine := flat(id)
	var keys []string
	for _, o := range ids {
		for k, v := range flat(o) {
			if fmt.Sprint(mine[k]) != fmt.Sprint(v) && !slices.Contains(keys, k) {
				keys = append(keys, k)
			}
		}
		for k := range mine {
			if _, ok := flat(o)[k]; !ok && !slices.Contains(keys, k) {
				keys = append(keys, k)
			}
		}
	}
	slices.Sort(keys)
	var parts []string
	for _, k := range keys {
		v := "-"
		if x, ok := mine[k]; ok {
			v = fmt.Sprint(x)
		}
		parts = append(parts, k+"="+v)
	}
	return strings.Join(parts, " ")
}

// Agreement says whether a pool's repetitions agree: how many passed
// validation, the method's ±20% test (formal output tokens |a−b|/max, and
// each valid repetition's steady-state J/token within ±20% of their
// median), and the dispersion of that J/token as a relative range.
type Agreement struct {
	Planned int      `json:"planned"` // run.repetitions
	Found   int      `json:"found"`   // repetitions given
	Valid   int      `json:"valid"`   // passed validation: the ones pooled
	Invalid []string `json:"invalid"` // "run: why", never pooled
	Bound   float64  `json:"bound"`   // AgreementBound
	// TokenSpread is (max−min)/max of the valid repetitions' formal output
	// tokens: the method's comparability figure.
	TokenSpread float64 `json:"formal_output_tokens_spread"`
	// MaxDeviation is the largest |x − median|/median of steady-state
	// J/token; Outliers are the repetitions beyond the bound ("run +27%").
	MaxDeviation *float64 `json:"max_deviation"`
	Outliers     []string `json:"outliers"`
	// RelativeRange is (max − min)/median of steady-state J/token: the
	// dispersion, read off the same range the interval shows.
	RelativeRange *float64 `json:"relative_range"`
	Agree         bool     `json:"agree"`
	Verdict       string   `json:"verdict"` // "agree", or why they do not or cannot be told
	// HeterogeneityP is Cochran's Q test of the valid repetitions'
	// steady-state J/token against their within-run standard errors
	// (intervals.figures): small when they differ by more than their own
	// intervals explain, the run-to-run spread a single run's interval
	// leaves out. Nil with fewer than two standard errors (older reports).
	HeterogeneityP *float64 `json:"heterogeneity_p"`
}

// Agreement judges the pool's repetitions.
func (p *RepetitionPool) Agreement() Agreement {
	a := Agreement{Planned: p.Planned, Found: len(p.Runs), Valid: len(p.Valid), Bound: AgreementBound,
		Invalid: []string{}, Outliers: []string{}}
	for _, r := range p.Runs {
		if why := r.InvalidReason(); why != "" {
			a.Invalid = append(a.Invalid, r.Name+": "+why)
		}
	}
	var lo, hi int64 = math.MaxInt64, 0
	for _, r := range p.Valid {
		lo, hi = min(lo, r.Report.Tokens.FormalOutput), max(hi, r.Report.Tokens.FormalOutput)
	}
	if hi > 0 {
		a.TokenSpread = float64(hi-lo) / float64(hi)
	}
	var missing []string
	ss, ok := p.Pool(SteadyStateJPT)
	if ok && ss.Median > 0 {
		dev := 0.0
		for _, r := range p.Valid {
			v, has := SteadyStateJPT.Value(&r.Report)
			if !has {
				missing = append(missing, r.Name)
				continue
			}
			d := (v - ss.Median) / ss.Median
			dev = max(dev, math.Abs(d))
			if math.Abs(d) > AgreementBound {
				a.Outliers = append(a.Outliers, fmt.Sprintf("%s %+.0f%%", r.Name, 100*d))
			}
		}
		rr := (ss.Max - ss.Min) / ss.Median
		a.MaxDeviation, a.RelativeRange = &dev, &rr
	}
	a.Verdict = a.verdict(missing)
	a.Agree = a.Verdict == "agree"
	a.HeterogeneityP = heterogeneity(p.Valid)
	return a
}

// heterogeneity is Cochran's Q p-value of the runs' steady-state J/token
// (the method's headline, drain included) weighted by their within-run
// standard errors; nil with fewer than two.
func heterogeneity(runs []*Run) *float64 {
	var xs, ws []float64
	for _, r := range runs {
		v, ok := SteadyStateJPT.Value(&r.Report)
		se, _, has := r.Report.IntervalSE(SteadyStateJPT.Key)
		if ok && has && se > 0 {
			xs, ws = append(xs, v), append(ws, 1/(se*se))
		}
	}
	if len(xs) < 2 {
		return nil
	}
	mean, wsum := 0.0, 0.0
	for i, x := range xs {
		mean, wsum = mean+ws[i]*x, wsum+ws[i]
	}
	mean /= wsum
	q := 0.0
	for i, x := range xs {
		q += ws[i] * (x - mean) * (x - mean)
	}
	return f64(distuv.ChiSquared{K: float64(len(xs) - 1)}.Survival(q))
}

// verdict is "agree", or the first reason they do not (or cannot be told
// to).
func (a Agreement) verdict(missing []string) string {
	switch {
	case a.Valid < 2:
		return fmt.Sprintf("cannot tell: %d valid repetition(s), 2 needed", a.Valid)
	case a.MaxDeviation == nil:
		return "cannot tell: no valid repetition has a steady-state J/token"
	case len(missing) > 0:
		return "cannot tell: no steady-state J/token in " + strings.Join(missing, ", ")
	case len(a.Outliers) > 0:
		return fmt.Sprintf("disagree: steady-state J/token beyond ±%.0f%% of the median: %s", 100*a.Bound, strings.Join(a.Outliers, ", "))
	case a.TokenSpread > a.Bound:
		return fmt.Sprintf("disagree: formal output tokens spread %.0f%% > %.0f%%", 100*a.TokenSpread, 100*a.Bound)
	}
	return "agree"
}

// RepetitionSummary is a pool as compare and pareto report it (JSON):
// each metric's median and range over the valid repetitions, and their
// agreement.
type RepetitionSummary struct {
	Group            string             `json:"group"`
	Runs             []string           `json:"runs"`
	Interval         string             `json:"interval"`          // IntervalMinMax
	IntervalCoverage float64            `json:"interval_coverage"` // of the steady-state range, as an interval of the median
	Metrics          map[string]*Pooled `json:"metrics"`           // by report key; null: no valid repetition has it
	Agreement        Agreement          `json:"agreement"`
}

// Summary is the pool's summary over metrics.
func (p *RepetitionPool) Summary(metrics []Metric) RepetitionSummary {
	s := RepetitionSummary{Group: p.Name, Interval: IntervalMinMax, Metrics: map[string]*Pooled{}, Agreement: p.Agreement()}
	for _, r := range p.Runs {
		s.Runs = append(s.Runs, r.Name)
	}
	for _, m := range metrics {
		if v, ok := p.Pool(m); ok {
			s.Metrics[m.Key] = &v
		} else {
			s.Metrics[m.Key] = nil
		}
	}
	if ss := s.Metrics[SteadyStateJPT.Key]; ss != nil {
		s.IntervalCoverage = IntervalCoverage(ss.N)
	}
	return s
}

// Of is the metric of a run, or of a pooled run (Set.Pooled) the median
// over its pool's valid repetitions.
func (m Metric) Of(r *Run) (float64, bool) {
	if r.Pool != nil {
		v, ok := r.Pool.Pool(m)
		return v.Median, ok
	}
	return m.Value(&r.Report)
}

// Set is the runs a run-set command reads and the repetition pools among
// them: the re-runs of one run identity (poolRepetitions).
type Set struct {
	Runs   []*Run            // every report read, in argument order
	Pools  []*RepetitionPool // in order of first appearance
	pooled []*Run            // Pooled's result, made once
}

// NewSet pools runs' re-runs by run identity.
func NewSet(runs []*Run) *Set {
	return &Set{Runs: runs, Pools: poolRepetitions(runs)}
}

// Load reads the reports the arguments name (each a report, report
// directory, run id or repetition group id; ResolveReport, ResolveGroup)
// and pools their re-runs by run identity: how pareto, recommend, plan,
// diff and compare read their input. Two reports with the same run_id are
// an error; an argument naming no report wraps ErrNoReport.
func Load(args []string, opts LoadOptions) (*Set, error) {
	runs, err := loadReports(args, opts)
	if err != nil {
		return nil, err
	}
	return NewSet(runs), nil
}

// Pooled is the runs with the repetitions of each pool replaced by one
// pooled run, at its first repetition's place: named after the pool, its
// metrics the medians over the valid repetitions (Metric.Of), invalid
// when none is valid. Runs that are no repetition are kept as they are. A
// pool named like one of those (a run "g" beside the group g's g-rep1…)
// is named "g [repetitions]", so no two candidates share a name.
func (s *Set) Pooled() []*Run {
	if s.pooled == nil {
		s.pooled = poolRuns(s.Runs, s.Pools)
	}
	return s.pooled
}

// poolRuns is Pooled over runs and their pools.
func poolRuns(runs []*Run, pools []*RepetitionPool) []*Run {
	of := map[*Run]*RepetitionPool{}
	for _, p := range pools {
		for _, r := range p.Runs {
			of[r] = p
		}
	}
	for _, r := range runs {
		for _, p := range pools {
			if of[r] == nil && r.Name == p.Name {
				p.Name += " [repetitions]"
			}
		}
	}
	var out []*Run
	done := map[*RepetitionPool]bool{}
	for _, r := range runs {
		p := of[r]
		switch {
		case p == nil:
			out = append(out, r)
		case !done[p]:
			done[p] = true
			base := p.Runs[0]
			if len(p.Valid) > 0 {
				base = p.Valid[0]
			}
			out = append(out, &Run{Name: p.Name, Report: base.Report, Raw: base.Raw, Load: base.Load, Pool: p, Sanity: poolSanity(p)})
		}
	}
	return out
}

// poolSanity is the output sanity counts of a pool's valid repetitions
// added up; nil when one of them has none (no archive found).
func poolSanity(p *RepetitionPool) *report.OutputCounts {
	var cs []report.OutputCounts
	for _, r := range p.Valid {
		if r.Sanity == nil {
			return nil
		}
		cs = append(cs, *r.Sanity)
	}
	if len(cs) == 0 {
		return nil
	}
	s := outputsanity.Sum(cs)
	return &s
}

// poolNote is a pooled run's note: how many repetitions were pooled and
// whether they agree.
func poolNote(p *RepetitionPool) string {
	a := p.Agreement()
	s := fmt.Sprintf("median [%s] of %d valid of %d repetitions", IntervalMinMax, a.Valid, a.Found)
	if a.Planned > a.Found {
		s += fmt.Sprintf(" (%d planned)", a.Planned)
	}
	if len(a.Invalid) > 0 {
		s += "; not pooled: " + strings.Join(a.Invalid, ", ")
	}
	return s + "; " + a.Verdict
}
