package runset

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/joulemark/joulemark/internal/contract"
	"github.com/joulemark/joulemark/report/outputsanity"
)

// Constraint is one bound a run must meet to be recommended.
type Constraint struct {
	Metric Metric
	Bound  float64
	Upper  bool   // true: value ≤ Bound; false: value ≥ Bound
	Flag   string // the command-line flag that set it, for messages
}

// Check returns why run r breaks the constraint, or "" when it meets it. A
// run missing the constrained metric breaks it; a pooled run (Set.Pooled) is
// judged on its repetitions' median.
func (c Constraint) Check(r *Run) string {
	v, ok := c.Metric.Of(r)
	if !ok && r.Mode() == contract.ModeAttached && slices.ContainsFunc(LifecycleBasis, func(l Metric) bool { return l.Key == c.Metric.Key }) {
		return fmt.Sprintf("%s not measured: an attached run has no lifecycle (%s)", c.Metric.Key, c.Flag)
	}
	if !ok {
		return fmt.Sprintf("%s missing (%s)", c.Metric.Key, c.Flag)
	}
	f := c.Metric.Text
	if c.Upper && v > c.Bound {
		return fmt.Sprintf("%s %s > %s (%s)", c.Metric.Key, f(v), f(c.Bound), c.Flag)
	}
	if !c.Upper && v < c.Bound {
		return fmt.Sprintf("%s %s < %s (%s)", c.Metric.Key, f(v), f(c.Bound), c.Flag)
	}
	return ""
}

// Recommendation is the outcome of Recommend.
type Recommendation struct {
	Best     *Run              // nil when no run survived the constraints
	Front    []*Run            // the Pareto front among survivors, best first
	Excluded map[string]string // run name → why it was excluded
	Order    []*Run            // every run, input order
	Prefer   Metric
	// Warnings name the pools on the front whose repetitions disagree:
	// they stay eligible, ranked on their medians.
	Warnings []string
}

// Recommend drops invalid runs, runs breaking a constraint and runs whose
// output sanity is worse than maxBadRatio (when ≥ 0), classifies the rest
// with Pareto over metrics, and picks one from the front.
//
// A pooled run (Set.Pooled) is one candidate judged on its repetitions'
// medians; it is excluded when none is valid, and its output sanity is
// every valid repetition's. A pool whose repetitions disagree stays
// eligible (its median is robust to one outlier of three) and is named in
// Warnings when it reaches the front.
//
// Tiebreak among the front, in order: the prefer metric (in its direction;
// a run lacking it comes after those that have it), then full-lifecycle
// J/token (lower), then throughput (higher), then run name (lexical), so the
// choice never depends on the order the reports were given in.
func Recommend(runs []*Run, cons []Constraint, maxBadRatio float64, metrics []Metric, prefer Metric) Recommendation {
	rec := Recommendation{Excluded: map[string]string{}, Order: runs, Prefer: prefer}
	var survivors []*Run
	for _, r := range runs {
		if reason := r.InvalidReason(); reason != "" {
			rec.Excluded[r.Name] = reason
			continue
		}
		var broken []string
		for _, c := range cons {
			if why := c.Check(r); why != "" {
				broken = append(broken, why)
			}
		}
		if maxBadRatio >= 0 {
			if why := checkRunSanity(r, maxBadRatio); why != "" {
				broken = append(broken, why)
			}
		}
		if len(broken) > 0 {
			rec.Excluded[r.Name] = strings.Join(broken, "; ")
			continue
		}
		survivors = append(survivors, r)
	}
	for _, c := range Pareto(survivors, metrics) {
		if c.Front() {
			rec.Front = append(rec.Front, c.Run)
		} else {
			rec.Excluded[c.Run.Name] = "not on the Pareto front of the runs meeting every constraint: dominated by " + strings.Join(c.DominatedBy, ", ")
		}
	}
	slices.SortStableFunc(rec.Front, func(a, b *Run) int { return tiebreak(a, b, prefer) })
	if len(rec.Front) > 0 {
		rec.Best = rec.Front[0]
	}
	for _, r := range rec.Front {
		if r.Pool != nil && strings.HasPrefix(r.Pool.Agreement().Verdict, "disagree") {
			rec.Warnings = append(rec.Warnings, fmt.Sprintf("%s: its repetitions %s; it stays eligible, ranked on its medians: rerun it before relying on them", r.Name, r.Pool.Agreement().Verdict))
		}
	}
	return rec
}

// checkRunSanity is checkSanity of a run, or of every valid repetition of a
// pooled run: one breaking the bound breaks it for the pool.
func checkRunSanity(r *Run, maxBadRatio float64) string {
	if r.Pool == nil {
		return checkSanity(r, maxBadRatio)
	}
	var broken []string
	for _, v := range r.Pool.Valid {
		if why := checkSanity(v, maxBadRatio); why != "" {
			broken = append(broken, v.Name+": "+why)
		}
	}
	return strings.Join(broken, "; ")
}

func checkSanity(r *Run, maxBadRatio float64) string {
	s := r.Sanity
	if s == nil {
		return "output sanity unknown: no requests.jsonl found (--max-bad-output-ratio)"
	}
	bad, known := s.Bad()
	if !known {
		return "output sanity incomplete: archive lacks output hash or finish reason (--max-bad-output-ratio)"
	}
	if s.Requests == 0 {
		return "output sanity unknown: no successful formal request in the archive (--max-bad-output-ratio)"
	}
	ratio := float64(bad) / float64(s.Requests)
	if ratio > maxBadRatio {
		return fmt.Sprintf("bad outputs %s > %s (%d empty/repeated/short of %d; --max-bad-output-ratio)",
			FormatValue(ratio, true), FormatValue(maxBadRatio, true), bad, s.Requests)
	}
	return ""
}

func compareMetric(a, b *Run, m Metric) int {
	va, oka := m.Of(a)
	vb, okb := m.Of(b)
	switch {
	case oka && !okb:
		return -1
	case !oka && okb:
		return 1
	case !oka && !okb:
		return 0
	case m.Dir.Better(va, vb):
		return -1
	case m.Dir.Better(vb, va):
		return 1
	}
	return 0
}

func tiebreak(a, b *Run, prefer Metric) int {
	for _, m := range []Metric{prefer, LifecycleJPT, Throughput} {
		if c := compareMetric(a, b, m); c != 0 {
			return c
		}
	}
	return cmp.Compare(a.Name, b.Name)
}

// ErrNoSurvivor is returned by WriteRecommendation when no run meets every
// constraint.
var ErrNoSurvivor = errors.New("no run meets every constraint")

// WriteRecommendation prints the choice, the front, and why every other run
// was excluded. It returns ErrNoSurvivor when nothing was recommended. A
// pooled run's reason cell also says how its repetitions were pooled and
// whether they agree (poolNote).
func WriteRecommendation(w io.Writer, rec Recommendation, metrics []Metric) error {
	if rec.Best != nil {
		fmt.Fprintf(w, "recommended: %s\n", rec.Best.Name)
		fmt.Fprintf(w, "  on the Pareto front of the runs meeting every constraint; among the front: best %s, then full_lifecycle_joules_per_token, throughput, run name\n", rec.Prefer.Key)
		if rec.Best.Pool != nil {
			fmt.Fprintf(w, "  repetition group %s: %s\n", rec.Best.Name, poolNote(rec.Best.Pool))
		}
	} else {
		fmt.Fprintln(w, "recommended: none")
	}
	var names []string
	for _, r := range rec.Front {
		names = append(names, r.Name)
	}
	if len(names) > 0 {
		fmt.Fprintf(w, "front (best first): %s\n", strings.Join(names, ", "))
	}
	for _, s := range rec.Warnings {
		fmt.Fprintf(w, "warning: %s\n", s)
	}
	fmt.Fprintln(w)
	rows := [][]string{{"run", "load", "status"}}
	for _, m := range metrics {
		rows[0] = append(rows[0], m.Header())
		if m.Key == Throughput.Key {
			rows[0] = append(rows[0], "outputs empty/rep/short")
		}
	}
	rows[0] = append(rows[0], "reason")
	for _, r := range rec.Order {
		status, reason := recommendStatus(rec, r)
		if r.Pool != nil {
			reason = strings.Join(slices.DeleteFunc([]string{reason, poolNote(r.Pool)}, func(s string) bool { return s == "" }), "; ")
		}
		if reason == "" {
			reason = "-"
		}
		row := []string{r.Name, RunLoad(r), status}
		for _, m := range metrics {
			row = append(row, FormatMetric(m, r))
			if m.Key == Throughput.Key {
				row = append(row, outputsanity.Format(r.Sanity))
			}
		}
		rows = append(rows, append(row, reason))
	}
	if err := Table(w, rows); err != nil {
		return err
	}
	if rec.Best == nil {
		return ErrNoSurvivor
	}
	return nil
}
