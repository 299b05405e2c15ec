package choose

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
)

// Dominates reports whether run a Pareto-dominates run b over metrics: over
// the metrics both runs have, a is no worse in every one and strictly better
// in at least one. A metric missing in either run narrows the comparison to
// the others instead of failing it; with no metric in common neither
// dominates. It also returns the metrics the comparison used.
func Dominates(a, b *Run, metrics []Metric) (bool, []Metric) {
	var used []Metric
	better := false
	for _, m := range metrics {
		va, oka := m.Value(&a.Report)
		vb, okb := m.Value(&b.Report)
		if !oka || !okb {
			continue
		}
		used = append(used, m)
		if m.Dir.Better(vb, va) {
			return false, used
		}
		if m.Dir.Better(va, vb) {
			better = true
		}
	}
	return better, used
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
}

// Front reports whether the run is on the Pareto front.
func (c Class) Front() bool { return c.Rank == 1 }

// Pareto classifies runs over metrics. Invalid runs (an excluding flag) are
// shown but left out: their figures are not formal results. The result keeps
// the input order.
func Pareto(runs []*Run, metrics []Metric) []Class {
	classes := make([]Class, len(runs))
	var live []int
	for i, r := range runs {
		classes[i].Run = r
		for _, m := range metrics {
			if _, ok := m.Value(&r.Report); !ok {
				classes[i].Missing = append(classes[i].Missing, m.Key)
			}
		}
		if reason := r.InvalidReason(); reason != "" {
			classes[i].Excluded = reason
			continue
		}
		live = append(live, i)
	}
	for i := range live {
		for j := range live {
			if i == j {
				continue
			}
			a, b := runs[live[j]], runs[live[i]]
			if d, _ := Dominates(a, b, metrics); d {
				classes[live[i]].DominatedBy = append(classes[live[i]].DominatedBy, a.Name)
			}
		}
	}
	// Non-dominated sorting: peel fronts off what remains.
	remaining := slices.Clone(live)
	for rank := 1; len(remaining) > 0; rank++ {
		var front, rest []int
		for _, i := range remaining {
			dominated := false
			for _, j := range remaining {
				if i != j {
					if d, _ := Dominates(runs[j], runs[i], metrics); d {
						dominated = true
						break
					}
				}
			}
			if dominated {
				rest = append(rest, i)
			} else {
				front = append(front, i)
			}
		}
		if len(front) == 0 { // a dominance cycle (possible when comparisons are narrowed)
			front, rest = rest, nil
		}
		for _, i := range front {
			classes[i].Rank = rank
		}
		remaining = rest
	}
	return classes
}

// WriteParetoTable prints the classification with each metric, its
// direction, and the output sanity beside throughput.
func WriteParetoTable(w io.Writer, classes []Class, metrics []Metric) error {
	header := []string{"run", "pareto"}
	for _, m := range metrics {
		header = append(header, m.Label+"("+m.Dir.String()+")")
		if m.Key == Throughput.Key {
			header = append(header, "outputs empty/rep/short")
		}
	}
	header = append(header, "note")
	rows := [][]string{header}
	for _, c := range classes {
		row := []string{c.Run.Name, classLabel(c)}
		for _, m := range metrics {
			row = append(row, FormatMetric(m, c.Run))
			if m.Key == Throughput.Key {
				row = append(row, FormatSanity(c.Run.Sanity))
			}
		}
		row = append(row, classNote(c))
		rows = append(rows, row)
	}
	if err := Table(w, rows); err != nil {
		return err
	}
	_, err := fmt.Fprintln(w, "pareto: front = dominated by no other valid run; rank n = front once ranks < n are removed; a metric missing in a run narrows its comparisons to the metrics both runs have.")
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
	if c.Excluded != "" {
		notes = append(notes, c.Excluded)
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
	RunID       string              `json:"run_id"`
	Rank        int                 `json:"rank"` // 1 = front, 0 = excluded
	Front       bool                `json:"front"`
	Excluded    string              `json:"excluded,omitempty"`
	DominatedBy []string            `json:"dominated_by"`
	Missing     []string            `json:"missing"`
	Metrics     map[string]*float64 `json:"metrics"`
	Sanity      *Sanity             `json:"output_sanity"`
}

// WriteParetoJSON prints the classification as JSON.
func WriteParetoJSON(w io.Writer, classes []Class, metrics []Metric) error {
	out := []paretoJSON{}
	for _, c := range classes {
		p := paretoJSON{RunID: c.Run.Name, Rank: c.Rank, Front: c.Front(), Excluded: c.Excluded,
			DominatedBy: c.DominatedBy, Missing: c.Missing, Metrics: map[string]*float64{}, Sanity: c.Run.Sanity}
		for _, m := range metrics {
			if v, ok := m.Value(&c.Run.Report); ok {
				p.Metrics[m.Key] = f64(v)
			} else {
				p.Metrics[m.Key] = nil
			}
		}
		out = append(out, p)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}
