package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/joulemark/joulemark/analyze/choose"
	"github.com/joulemark/joulemark/analyze/compare"
	"github.com/joulemark/joulemark/internal/reportcsv"
)

// CSV output (docs/cli.md, "Output"): one row per run, command columns
// first (prefixed with the command's name), then the run's report.json
// keys in report order.

// reportRow is the row of run: lead, then the leaves of its report.json.
func reportRow(t *reportcsv.Table, run *choose.Run, lead ...reportcsv.Field) error {
	doc, err := os.ReadFile(run.Path)
	if err != nil {
		return fmt.Errorf("reading %s: %w", run.Path, err)
	}
	if err := t.AddJSON(lead, doc); err != nil {
		return fmt.Errorf("%s: %w", run.Path, err)
	}
	return nil
}

func field(key string, v any) reportcsv.Field {
	switch x := v.(type) {
	case string:
		return reportcsv.Field{Key: key, Value: x}
	case []string:
		return reportcsv.Field{Key: key, Value: strings.Join(x, ";")}
	case float64:
		return reportcsv.Field{Key: key, Value: strconv.FormatFloat(x, 'g', -1, 64)}
	case *float64:
		if x == nil {
			return reportcsv.Field{Key: key}
		}
		return field(key, *x)
	}
	return reportcsv.Field{Key: key, Value: fmt.Sprint(v)}
}

// writeReportCSV writes report.json (js) as one CSV row (analyze).
func writeReportCSV(w io.Writer, js []byte) error {
	var t reportcsv.Table
	if err := t.AddJSON(nil, js); err != nil {
		return err
	}
	return t.Write(w)
}

// writeCompareCSV: one row per run with its group and whether it enters
// the medians.
func writeCompareCSV(w io.Writer, res compare.Result) error {
	var t reportcsv.Table
	for _, r := range res.Runs {
		if err := reportRow(&t, r.Run, field("compare.group", r.Group), field("compare.included", r.Included),
			field("compare.excluded", r.Excluded)); err != nil {
			return err
		}
	}
	return t.Write(w)
}

// writeParetoCSV: one row per run with its rank (1 = front, 0 = left out).
func writeParetoCSV(w io.Writer, classes []choose.Class) error {
	var t reportcsv.Table
	if err := addParetoRows(&t, classes); err != nil {
		return err
	}
	return t.Write(w)
}

// addParetoRows adds one row per classified run to t, lead's fields (the
// group, with --group-by) first.
func addParetoRows(t *reportcsv.Table, classes []choose.Class, lead ...reportcsv.Field) error {
	for _, c := range classes {
		// a pooled run is one row per repetition, each with the pool's class
		members, pool := []*choose.Run{c.Run}, ""
		if c.Run.Pool != nil {
			members, pool = c.Run.Pool.Runs, c.Run.Name
		}
		for _, r := range members {
			if err := reportRow(t, r, append(slices.Clone(lead), field("pareto.rank", c.Rank), field("pareto.front", c.Rank == 1),
				field("pareto.excluded", c.Excluded), field("pareto.dominated_by", c.DominatedBy),
				field("pareto.missing", c.Missing), field("pareto.repetition_group", pool))...); err != nil {
				return err
			}
		}
	}
	return nil
}

// recommendStatus is a run's status in rec and why.
func recommendStatus(rec choose.Recommendation, r *choose.Run) (status, reason string) {
	status = "front"
	if why, ok := rec.Excluded[r.Name]; ok {
		status, reason = "excluded", why
	}
	if r == rec.Best {
		status = "recommended"
	}
	return status, reason
}

// writeRecommendCSV: one row per run, input order, with its status.
func writeRecommendCSV(w io.Writer, rec choose.Recommendation) error {
	var t reportcsv.Table
	for _, r := range rec.Order {
		status, reason := recommendStatus(rec, r)
		if err := reportRow(&t, r, field("recommend.status", status), field("recommend.reason", reason)); err != nil {
			return err
		}
	}
	return t.Write(w)
}

// recommendJSON is recommend --format json.
type recommendJSON struct {
	Recommended *string            `json:"recommended"`
	Prefer      string             `json:"prefer"`
	Front       []string           `json:"front"`
	Runs        []recommendRunJSON `json:"runs"`
}

type recommendRunJSON struct {
	RunID   string              `json:"run_id"`
	Report  string              `json:"report"`
	Status  string              `json:"status"` // recommended, front or excluded
	Reason  string              `json:"reason,omitempty"`
	Metrics map[string]*float64 `json:"metrics"` // by report key; null = missing
}

func writeRecommendJSON(w io.Writer, rec choose.Recommendation, metrics []choose.Metric) error {
	out := recommendJSON{Prefer: rec.Prefer.Key, Front: []string{}, Runs: []recommendRunJSON{}}
	if rec.Best != nil {
		out.Recommended = &rec.Best.Name
	}
	for _, r := range rec.Front {
		out.Front = append(out.Front, r.Name)
	}
	for _, r := range rec.Order {
		status, reason := recommendStatus(rec, r)
		m := map[string]*float64{}
		for _, mt := range metrics {
			if v, ok := mt.Value(&r.Report); ok && !math.IsNaN(v) && !math.IsInf(v, 0) {
				m[mt.Key] = &v
			} else {
				m[mt.Key] = nil
			}
		}
		out.Runs = append(out.Runs, recommendRunJSON{RunID: r.Name, Report: r.Path, Status: status, Reason: reason, Metrics: m})
	}
	return writeJSON(w, out)
}

// diffJSON is diff --format json.
type diffJSON struct {
	Before            string           `json:"before"`
	After             string           `json:"after"`
	ThresholdPercent  float64          `json:"threshold_percent"`
	Changes           []diffChangeJSON `json:"changes"`
	ValidityRegressed bool             `json:"validity_regressed"`
	SanityFailed      string           `json:"sanity_failed,omitempty"`
	Regressions       int              `json:"regressions"`
}

type diffChangeJSON struct {
	Metric string   `json:"metric"`
	Better string   `json:"better"` // min or max
	Before *float64 `json:"before"`
	After  *float64 `json:"after"`
	// WorsePercent is the regression in percent of |before| (positive =
	// worse in the metric's direction); null when a value is missing or
	// the change is infinite.
	WorsePercent *float64 `json:"worse_percent"`
	// Significant, Test and P: whether the change is unlikely to be noise,
	// by which test (ci, u-test, none: untested) and its p-value.
	Significant bool        `json:"significant"`
	Test        string      `json:"test"`
	P           *float64    `json:"p"`
	BeforeCI95  *[2]float64 `json:"before_ci95"`
	AfterCI95   *[2]float64 `json:"after_ci95"`
	Regressed   bool        `json:"regressed"`
	Note        string      `json:"note,omitempty"`
}

func finite(v float64, ok bool) *float64 {
	if !ok || math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return &v
}

func diffResultJSON(d choose.DiffResult) diffJSON {
	out := diffJSON{Before: d.Before.Name, After: d.After.Name, ThresholdPercent: d.ThresholdPct,
		ValidityRegressed: d.ValidityRegressed, SanityFailed: d.SanityFailed, Regressions: d.Regressions(),
		Changes: []diffChangeJSON{}}
	for _, c := range d.Changes {
		out.Changes = append(out.Changes, diffChangeJSON{Metric: c.Metric.Key, Better: c.Metric.Dir.String(),
			Before: finite(c.Before, c.HasBefore), After: finite(c.After, c.HasAfter),
			WorsePercent: finite(c.Worse, c.HasBefore && c.HasAfter), Significant: c.Significant, Test: c.Test, P: finite(c.P, true),
			BeforeCI95: c.BeforeCI, AfterCI95: c.AfterCI, Regressed: c.Regressed, Note: c.Note})
	}
	return out
}

// writeDiffCSV: one row per tracked metric.
func writeDiffCSV(w io.Writer, d choose.DiffResult) error {
	var t reportcsv.Table
	for _, c := range diffResultJSON(d).Changes {
		js, err := json.Marshal(c)
		if err != nil {
			return err
		}
		if err := t.AddJSON([]reportcsv.Field{{Key: "before_run", Value: d.Before.Name}, {Key: "after_run", Value: d.After.Name}}, js); err != nil {
			return err
		}
	}
	return t.Write(w)
}

// writePlanCSV: one row per load point.
func writePlanCSV(w io.Writer, p choose.Plan) error {
	var t reportcsv.Table
	for _, pt := range p.Points {
		js, err := json.Marshal(pt)
		if err != nil {
			return err
		}
		admission := p.AdmissionLimit != nil && p.AdmissionLimit.RunID == pt.RunID
		if err := t.AddJSON([]reportcsv.Field{field("plan.admission_limit", admission)}, js); err != nil {
			return err
		}
	}
	return t.Write(w)
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
