// Package compare sets finished runs' reports side by side (`joulemark
// compare`): a comparability check on formal output tokens, medians per
// scenario group, the ratio of median full-lifecycle to median steady-state
// J/token, and the Spearman rank correlation between the orders the two
// bases give. Invalid runs are shown but never enter a median or a rank.
package compare

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/gonum/stat"

	"github.com/joulemark/joulemark/internal/stats"
	"github.com/joulemark/joulemark/report"
	"github.com/joulemark/joulemark/runset"
)

// DefaultTolerance is the largest relative spread of formal output tokens,
// |a−b|/max(a,b), between runs that are compared.
const DefaultTolerance = 0.20

// Options tune the comparison.
type Options struct {
	// GroupBy is the dotted report key, or several joined by commas, that
	// groups runs ("scenario", "run.model,run.concurrency"); a run with none
	// of them groups by its run identity (groupKey).
	GroupBy string
	// Pool puts runs of one group into one median even when they differ in
	// identity (run.model, run.engine, run.gpu_name, run.dataset_sha256, the
	// load point, ...). Without it such a group is split by those keys.
	Pool bool
	// Tolerance is the comparability bound on formal output tokens.
	Tolerance float64
}

// RunRow is one run in the comparison.
type RunRow struct {
	Run      *runset.Run `json:"-"`
	RunID    string      `json:"run_id"`
	Group    string      `json:"group"`
	Included bool        `json:"included"`
	Excluded string      `json:"excluded,omitempty"` // why it is left out of medians and ranks

	FormalOutputTokens int64                `json:"formal_output_tokens"`
	Metrics            map[string]*float64  `json:"metrics"` // tracked metrics by report key; null = missing
	Sanity             *report.OutputCounts `json:"output_sanity"`
}

// Spread is the comparability check over a set of runs.
type Spread struct {
	Runs       int     `json:"runs"`
	Min        string  `json:"min_run,omitempty"` // the run with the fewest formal output tokens
	Max        string  `json:"max_run,omitempty"`
	MinTokens  int64   `json:"min_tokens"`
	MaxTokens  int64   `json:"max_tokens"`
	Ratio      float64 `json:"spread"` // (max−min)/max: the largest |a−b|/max over all pairs
	Comparable bool    `json:"comparable"`
}

// Group is the medians of one scenario group's included runs.
type Group struct {
	Key        string   `json:"key"`
	Runs       []string `json:"runs"`     // every run of the group
	Included   int      `json:"included"` // valid runs that enter the medians
	MedianSS   *float64 `json:"median_steady_state_joules_per_token"`
	MedianLife *float64 `json:"median_full_lifecycle_joules_per_token"`
	// Ratio is MedianLife / MedianSS: how much the lifecycle adds to the
	// steady-state cost.
	Ratio    *float64 `json:"lifecycle_to_steady_state_ratio"`
	RankSS   *float64 `json:"rank_steady_state"` // 1 = fewest J/token; ties share the mean rank
	RankLife *float64 `json:"rank_full_lifecycle"`
	Spread   Spread   `json:"comparability"`
}

// Result is the whole comparison.
type Result struct {
	GroupBy       string   `json:"group_by"`
	Tolerance     float64  `json:"tolerance"`
	Runs          []RunRow `json:"runs"`
	Comparability Spread   `json:"comparability"`
	Groups        []Group  `json:"groups"`
	// Spearman is the rank correlation between the group orders by median
	// steady-state and by median full-lifecycle J/token; nil when fewer than
	// two groups have both or one order is all ties (SpearmanNote says why).
	// Sweeps are the configurations measured at several load points, with
	// their knee.
	Sweeps []Sweep `json:"sweeps,omitempty"`
	// Repetitions are the repetition groups among the runs (bench
	// --repeat): per group the median and range of each tracked metric over
	// its valid repetitions and whether they agree (runset.Agreement).
	Repetitions  []runset.RepetitionSummary `json:"repetitions,omitempty"`
	Spearman     *float64                   `json:"spearman"`
	SpearmanN    int                        `json:"spearman_groups"`
	SpearmanNote string                     `json:"spearman_note,omitempty"`
}

// Compare builds the comparison of a set's runs, in their input order.
func Compare(set *runset.Set, opts Options) Result {
	runs := set.Runs
	if opts.GroupBy == "" {
		opts.GroupBy = "scenario"
	}
	if opts.Tolerance <= 0 {
		opts.Tolerance = DefaultTolerance
	}
	res := Result{GroupBy: opts.GroupBy, Tolerance: opts.Tolerance}
	groups := map[string]*Group{}
	var order []string
	var included []*runset.Run
	members := map[string][]*runset.Run{}
	userKey := func(r *runset.Run) string { return groupKey(r, opts.GroupBy) }
	var split []string
	if !opts.Pool {
		split = runset.IdentitySplit(runs, userKey)
	}
	for i, r := range runs {
		key := userKey(r)
		if split != nil && split[i] != "" {
			key += " [" + split[i] + "]"
		}
		row := RunRow{Run: r, RunID: r.Name, Group: key, Included: true,
			FormalOutputTokens: r.Report.Tokens.FormalOutput, Metrics: map[string]*float64{}, Sanity: r.Sanity}
		for _, m := range runset.DiffMetrics {
			if v, ok := m.Value(&r.Report); ok {
				row.Metrics[m.Key] = &v
			} else {
				row.Metrics[m.Key] = nil
			}
		}
		if reason := r.InvalidReason(); reason != "" {
			row.Included, row.Excluded = false, reason
		}
		res.Runs = append(res.Runs, row)
		g, ok := groups[key]
		if !ok {
			g = &Group{Key: key}
			groups[key] = g
			order = append(order, key)
		}
		g.Runs = append(g.Runs, r.Name)
		if row.Included {
			g.Included++
			included = append(included, r)
			members[key] = append(members[key], r)
		}
	}
	res.Comparability = spread(included, opts.Tolerance)
	for _, key := range order {
		g := groups[key]
		g.Spread = spread(members[key], opts.Tolerance)
		g.MedianSS = median(members[key], runset.SteadyStateJPT)
		g.MedianLife = median(members[key], runset.LifecycleJPT)
		if g.MedianSS != nil && g.MedianLife != nil && *g.MedianSS != 0 {
			v := *g.MedianLife / *g.MedianSS
			g.Ratio = &v
		}
		res.Groups = append(res.Groups, *g)
	}
	rankGroups(&res)
	res.Sweeps = sweeps(runs, userKey)
	for _, p := range set.Pools {
		res.Repetitions = append(res.Repetitions, p.Summary(runset.DiffMetrics))
	}
	return res
}

// groupKey is the run's group: its values of the GroupBy keys. A run with
// none of them (no scenario, the default key) groups by its run identity:
// under its model, which IdentitySplit then splits by every identity key
// that differs, so re-runs of one configuration pool and a sweep's load
// points find each other. A run without identity (a report from before
// it) is a group of its own, named by its run id.
func groupKey(r *runset.Run, keys string) string {
	if key, ok := r.GroupKey(keys); ok {
		return key
	}
	if r.Report.Run == nil {
		return r.Name
	}
	if m := r.Report.Run.Model; m != "" {
		return m
	}
	return "(no model)"
}

// spread is the comparability check: the largest pairwise |a−b|/max of
// formal output tokens is the one between the smallest and largest run.
func spread(runs []*runset.Run, tol float64) Spread {
	s := Spread{Runs: len(runs), Comparable: true}
	if len(runs) == 0 {
		return s
	}
	lo, hi := runs[0], runs[0]
	for _, r := range runs[1:] {
		if r.Report.Tokens.FormalOutput < lo.Report.Tokens.FormalOutput {
			lo = r
		}
		if r.Report.Tokens.FormalOutput > hi.Report.Tokens.FormalOutput {
			hi = r
		}
	}
	s.Min, s.Max = lo.Name, hi.Name
	s.MinTokens, s.MaxTokens = lo.Report.Tokens.FormalOutput, hi.Report.Tokens.FormalOutput
	if s.MaxTokens > 0 {
		s.Ratio = float64(s.MaxTokens-s.MinTokens) / float64(s.MaxTokens)
	}
	s.Comparable = s.Ratio <= tol
	return s
}

// median of a metric over the runs that have it; nil when none has.
func median(runs []*runset.Run, m runset.Metric) *float64 {
	var xs []float64
	for _, r := range runs {
		if v, ok := m.Value(&r.Report); ok {
			xs = append(xs, v)
		}
	}
	if len(xs) == 0 {
		return nil
	}
	v := stats.Median(xs)
	return &v
}

// rankGroups ranks the groups having both medians under each basis and
// correlates the two orders (Spearman = Pearson correlation of the ranks,
// ties given their mean rank).
func rankGroups(res *Result) {
	// Each basis ranks the groups that have its median: attached runs'
	// groups (no lifecycle) rank on steady state alone.
	rankOn := func(med func(g *Group) *float64, set func(g *Group, r *float64)) {
		var xs []float64
		var at []int
		for i := range res.Groups {
			if v := med(&res.Groups[i]); v != nil {
				xs, at = append(xs, *v), append(at, i)
			}
		}
		for k, r := range ranks(xs) {
			set(&res.Groups[at[k]], &r)
		}
	}
	rankOn(func(g *Group) *float64 { return g.MedianSS }, func(g *Group, r *float64) { g.RankSS = r })
	rankOn(func(g *Group) *float64 { return g.MedianLife }, func(g *Group, r *float64) { g.RankLife = r })
	var idx []int
	for i, g := range res.Groups {
		if g.MedianSS != nil && g.MedianLife != nil {
			idx = append(idx, i)
		}
	}
	res.SpearmanN = len(idx)
	ss := make([]float64, len(idx))
	life := make([]float64, len(idx))
	for k, i := range idx {
		ss[k], life[k] = *res.Groups[i].MedianSS, *res.Groups[i].MedianLife
	}
	rs, rl := ranks(ss), ranks(life)
	if len(idx) < 2 {
		res.SpearmanNote = fmt.Sprintf("needs at least 2 groups with both medians, have %d", len(idx))
		return
	}
	rho := stat.Correlation(rs, rl, nil)
	if math.IsNaN(rho) {
		res.SpearmanNote = "one of the orders is all ties"
		return
	}
	res.Spearman = &rho
}

// ranks returns 1-based ranks of xs (smallest first), ties sharing the mean
// of the ranks they span.
func ranks(xs []float64) []float64 {
	idx := make([]int, len(xs))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(xs[a], xs[b]) })
	r := make([]float64, len(xs))
	for i := 0; i < len(idx); {
		j := i
		for j+1 < len(idx) && xs[idx[j+1]] == xs[idx[i]] {
			j++
		}
		mean := float64(i+j)/2 + 1
		for k := i; k <= j; k++ {
			r[idx[k]] = mean
		}
		i = j + 1
	}
	return r
}
