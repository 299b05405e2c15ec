package runset

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/joulemark/joulemark/internal/reportcsv"
)

// What the pareto, recommend and plan commands print, by --format (text,
// json or csv), over every run or per --group-by group.

// Constraints collects the bounds of the flags that are set.
type Constraints []Constraint

// Add bounds m by v when v is set: from above when upper, else from below.
func (cs *Constraints) Add(flag string, v *float64, m Metric, upper bool) {
	if v != nil {
		*cs = append(*cs, Constraint{Metric: m, Bound: *v, Upper: upper, Flag: flag})
	}
}

// AddDuration is Add for a latency bound given as a duration.
func (cs *Constraints) AddDuration(flag string, d *time.Duration, m Metric, upper bool) {
	if d != nil {
		s := d.Seconds()
		cs.Add(flag, &s, m, upper)
	}
}

// ParetoGroups classifies runs, all together when groupBy is empty, else
// each group of GroupRuns(runs, groupBy) apart.
func ParetoGroups(runs []*Run, groupBy string) []ParetoGroup {
	if groupBy == "" {
		return []ParetoGroup{{Classes: Pareto(runs, ParetoMetrics)}}
	}
	var pgs []ParetoGroup
	order, groups := GroupRuns(runs, groupBy)
	for _, k := range order {
		pgs = append(pgs, ParetoGroup{Name: k, Classes: Pareto(groups[k], ParetoMetrics)})
	}
	return pgs
}

// WritePareto writes the Pareto classification of runs as format.
func WritePareto(w io.Writer, format string, runs []*Run) error {
	classes := Pareto(runs, ParetoMetrics)
	switch format {
	case "json":
		return WriteParetoJSON(w, classes, ParetoMetrics)
	case "csv":
		return WriteParetoCSV(w, classes)
	}
	if _, note := SteadyBasis(runs, ParetoMetrics); note != "" {
		fmt.Fprintf(w, "Note: %s.\n", note)
	}
	return WriteParetoTable(w, classes, ParetoMetrics)
}

// WriteParetoGroups writes one classification per group of runs by
// groupBy (GroupRuns) as format: text sections, a JSON list of {group,
// pareto}, or one CSV with a pareto.group column.
func WriteParetoGroups(w io.Writer, format, groupBy string, runs []*Run) error {
	order, groups := GroupRuns(runs, groupBy)
	switch format {
	case "csv":
		var t reportcsv.Table
		for _, k := range order {
			if err := AddParetoRows(&t, Pareto(groups[k], ParetoMetrics), reportcsv.Value("pareto.group", k)); err != nil {
				return err
			}
		}
		return t.Write(w)
	case "json":
		var parts []string
		for _, k := range order {
			var b bytes.Buffer
			if err := WritePareto(&b, format, groups[k]); err != nil {
				return err
			}
			key, _ := json.Marshal(k)
			parts = append(parts, `{"group": `+string(key)+`, "pareto": `+strings.TrimSpace(b.String())+`}`)
		}
		_, err := fmt.Fprintf(w, "[%s]\n", strings.Join(parts, ",\n"))
		return err
	}
	for i, k := range order {
		if i > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "group %s (%s):\n", k, groupBy)
		if err := WritePareto(w, format, groups[k]); err != nil {
			return err
		}
	}
	return nil
}

// WriteRecommend writes rec as format; it returns ErrNoSurvivor when
// nothing was recommended.
func WriteRecommend(w io.Writer, format string, rec Recommendation) error {
	var err error
	switch format {
	case "json":
		err = WriteRecommendJSON(w, rec, ParetoMetrics)
	case "csv":
		err = WriteRecommendCSV(w, rec)
	default:
		return WriteRecommendation(w, rec, ParetoMetrics)
	}
	if err == nil && rec.Best == nil {
		err = ErrNoSurvivor
	}
	return err
}

// WriteRecommendGroups recommends within each group of runs by groupBy
// (GroupRuns) and prints each as text; it fails, wrapping ErrNoSurvivor,
// only when no group has a recommendation.
func WriteRecommendGroups(w io.Writer, groupBy string, runs []*Run, cons []Constraint, maxBadRatio float64, prefer Metric) error {
	order, groups := GroupRuns(runs, groupBy)
	var failed []string
	for i, k := range order {
		if i > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "group %s (%s):\n", k, groupBy)
		rec := Recommend(groups[k], cons, maxBadRatio, ParetoMetrics, prefer)
		if err := WriteRecommendation(w, rec, ParetoMetrics); err != nil {
			failed = append(failed, k)
		}
	}
	if len(failed) == len(order) {
		return fmt.Errorf("no run meets every constraint in any group (%s): %w", strings.Join(failed, "; "), ErrNoSurvivor)
	}
	return nil
}
