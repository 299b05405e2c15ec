package runset

import (
	"fmt"
	"io"
	"strings"

	"github.com/joulemark/joulemark/report"
	"github.com/joulemark/joulemark/report/outputsanity"
)

// dominates reports whether run a Pareto-dominates run b over metrics:
// over the metrics both runs have, a is no worse in every one and strictly
// better in at least one. A metric missing in either run narrows the
// comparison to the others instead of failing it; with no metric in common
// neither dominates.
func dominates(a, b *Run, metrics []Metric) bool {
	better := false
	for _, m := range metrics {
		va, oka := m.Of(a)
		vb, okb := m.Of(b)
		if !oka || !okb {
			continue
		}
		if m.Dir.Better(vb, va) {
			return false
		}
		if m.Dir.Better(va, vb) {
			better = true
		}
	}
	return better
}

// Class is one run's place in a Pareto classification.
type Class struct {
	Run *Run
	// Rank is 1 for the Pareto front, 2 for the front of what remains when
	// the first is removed, and so on; 0 for an excluded run.
	Rank        int
	DominatedBy []string // names of the runs that dominate it
	Missing     []string // keys of the metrics it lacks (comparisons narrowed)
	Excluded    string   // why it was left out of the classification, "" when it was not
	// Cycle is set when the run was ranked inside a dominance cycle, which
	// only narrowed comparisons can make (a beats b on one shared metric,
	// b beats c on another, c beats a on a third): its rank is shared with
	// the cycle although runs of it dominate it.
	Cycle bool
}

// Front reports whether the run is on the Pareto front.
func (c Class) Front() bool { return c.Rank == 1 }

// Pareto classifies runs over metrics. Invalid runs (an excluding flag) are
// shown but left out: their figures are not formal results. The result keeps
// the input order.
func Pareto(runs []*Run, metrics []Metric) []Class {
	metrics, _ = SteadyBasis(runs, metrics)
	classes := make([]Class, len(runs))
	var live []int
	for i, r := range runs {
		classes[i].Run = r
		for _, m := range metrics {
			if _, ok := m.Of(r); !ok {
				classes[i].Missing = append(classes[i].Missing, m.Key)
			}
		}
		if reason := r.InvalidReason(); reason != "" {
			classes[i].Excluded = reason
			continue
		}
		live = append(live, i)
	}
	// dominated[i] lists the live runs dominating live run i; the fronts are
	// then peeled off with counts (fast non-dominated sort, O(n²) after the
	// O(n²·m) comparisons).
	n := len(live)
	beats := make([][]int, n) // beats[j]: the runs j dominates
	count := make([]int, n)   // how many runs dominate i and are not yet ranked
	for i := range n {
		for j := range n {
			if i == j {
				continue
			}
			if dominates(runs[live[j]], runs[live[i]], metrics) {
				classes[live[i]].DominatedBy = append(classes[live[i]].DominatedBy, runs[live[j]].Name)
				beats[j] = append(beats[j], i)
				count[i]++
			}
		}
	}
	ranked := 0
	var front []int
	for i := range n {
		if count[i] == 0 {
			front = append(front, i)
		}
	}
	for rank := 1; ranked < n; rank++ {
		if len(front) == 0 {
			// A dominance cycle (possible when comparisons are narrowed by
			// missing metrics): the unranked runs dominated by the fewest
			// unranked runs share the next rank.
			least := -1
			for i := range n {
				if classes[live[i]].Rank == 0 && (least < 0 || count[i] < least) {
					least = count[i]
				}
			}
			for i := range n {
				if classes[live[i]].Rank == 0 && count[i] == least {
					front = append(front, i)
					classes[live[i]].Cycle = true
				}
			}
		}
		var next []int
		for _, i := range front {
			classes[live[i]].Rank = rank
			ranked++
		}
		for _, i := range front {
			for _, k := range beats[i] {
				count[k]--
				if count[k] == 0 && classes[live[k]].Rank == 0 {
					next = append(next, k)
				}
			}
		}
		front = next
	}
	return classes
}

// paretoRows is the classification as a table, header first: each run
// with its load, its class, each metric (with its direction) and a note.
func paretoRows(classes []Class, metrics []Metric) [][]string {
	header := []string{"run", "load", "pareto"}
	for _, m := range metrics {
		header = append(header, m.Header()+m.Dir.Arrow())
		if m.Key == Throughput.Key {
			header = append(header, "outputs empty/rep/short")
		}
	}
	header = append(header, "note")
	rows := [][]string{header}
	for _, c := range classes {
		row := []string{c.Run.Name, RunLoad(c.Run), classLabel(c)}
		for _, m := range metrics {
			row = append(row, FormatMetric(m, c.Run))
			if m.Key == Throughput.Key {
				row = append(row, outputsanity.Format(c.Run.Sanity))
			}
		}
		row = append(row, classNote(c))
		rows = append(rows, row)
	}
	return rows
}

// paretoLegend explains the table's arrows and classes.
const paretoLegend = "↓ lower is better, ↑ higher is better; latencies in ms.\npareto: front = dominated by no other valid run; rank n = front once ranks < n are removed; a metric missing in a run narrows its comparisons to the metrics both runs have."

// WriteParetoTable prints the classification with each run's load, each
// metric, its direction, and the output sanity beside throughput.
func WriteParetoTable(w io.Writer, classes []Class, metrics []Metric) error {
	if err := Table(w, paretoRows(classes, metrics)); err != nil {
		return err
	}
	_, err := fmt.Fprintln(w, paretoLegend)
	return err
}

func classLabel(c Class) string {
	switch {
	case c.Excluded != "":
		return "excluded"
	case c.Front():
		return "front"
	default:
		return fmt.Sprintf("rank %d", c.Rank)
	}
}

func classNote(c Class) string {
	var notes []string
	if c.Run.Pool != nil {
		notes = append(notes, poolNote(c.Run.Pool))
	}
	if c.Excluded != "" {
		notes = append(notes, c.Excluded)
	}
	if c.Cycle {
		notes = append(notes, "in a dominance cycle (narrowed comparisons)")
	}
	if len(c.DominatedBy) > 0 {
		notes = append(notes, "dominated by "+strings.Join(c.DominatedBy, ", "))
	}
	if len(c.Missing) > 0 {
		notes = append(notes, "missing "+strings.Join(c.Missing, ", "))
	}
	if len(notes) == 0 {
		return "-"
	}
	return strings.Join(notes, "; ")
}

// paretoJSON is one run of `joulemark pareto --format json`.
type paretoJSON struct {
	RunID       string               `json:"run_id"`
	Rank        int                  `json:"rank"` // 1 = front, 0 = excluded
	Front       bool                 `json:"front"`
	Excluded    string               `json:"excluded,omitempty"`
	DominatedBy []string             `json:"dominated_by"`
	Missing     []string             `json:"missing"`
	Metrics     map[string]*float64  `json:"metrics"`
	Sanity      *report.OutputCounts `json:"output_sanity"`
	// Repetitions is the pool a pooled run stands for (Set.Pooled).
	Repetitions *RepetitionSummary `json:"repetitions,omitempty"`
}

// WriteParetoJSON prints the classification as JSON.
func WriteParetoJSON(w io.Writer, classes []Class, metrics []Metric) error {
	out := []paretoJSON{}
	for _, c := range classes {
		p := paretoJSON{RunID: c.Run.Name, Rank: c.Rank, Front: c.Front(), Excluded: c.Excluded,
			DominatedBy: c.DominatedBy, Missing: c.Missing, Metrics: map[string]*float64{}, Sanity: c.Run.Sanity}
		for _, m := range metrics {
			if v, ok := m.Of(c.Run); ok {
				p.Metrics[m.Key] = f64(v)
			} else {
				p.Metrics[m.Key] = nil
			}
		}
		if c.Run.Pool != nil {
			s := c.Run.Pool.Summary(metrics)
			p.Repetitions = &s
		}
		out = append(out, p)
	}
	return writeJSON(w, out)
}
