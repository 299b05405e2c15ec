package runset

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"slices"

	"github.com/joulemark/joulemark/internal/reportcsv"
)

// CSV output (docs/cli.md, "Output"): one row per run, command columns
// first (prefixed with the command's name), then the run's report.json
// keys in report order.

// AddReportRow adds the row of run to t: lead, then the leaves of its
// report.json.
func AddReportRow(t *reportcsv.Table, run *Run, lead ...reportcsv.Field) error {
	doc, err := os.ReadFile(run.Path)
	if err != nil {
		return fmt.Errorf("reading %s: %w", run.Path, err)
	}
	if err := t.AddJSON(lead, doc); err != nil {
		return fmt.Errorf("%s: %w", run.Path, err)
	}
	return nil
}

// WriteParetoCSV writes one row per run with its rank (1 = front, 0 = left
// out).
func WriteParetoCSV(w io.Writer, classes []Class) error {
	var t reportcsv.Table
	if err := AddParetoRows(&t, classes); err != nil {
		return err
	}
	return t.Write(w)
}

// AddParetoRows adds one row per classified run to t, lead's fields (the
// group, with --group-by) first.
func AddParetoRows(t *reportcsv.Table, classes []Class, lead ...reportcsv.Field) error {
	for _, c := range classes {
		// a pooled run is one row per repetition, each with the pool's class
		members, pool := []*Run{c.Run}, ""
		if c.Run.Pool != nil {
			members, pool = c.Run.Pool.Runs, c.Run.Name
		}
		for _, r := range members {
			if err := AddReportRow(t, r, append(slices.Clone(lead), reportcsv.Value("pareto.rank", c.Rank), reportcsv.Value("pareto.front", c.Rank == 1),
				reportcsv.Value("pareto.excluded", c.Excluded), reportcsv.Value("pareto.dominated_by", c.DominatedBy),
				reportcsv.Value("pareto.missing", c.Missing), reportcsv.Value("pareto.repetition_group", pool))...); err != nil {
				return err
			}
		}
	}
	return nil
}

// recommendStatus is a run's status in rec and why.
func recommendStatus(rec Recommendation, r *Run) (status, reason string) {
	status = "front"
	if why, ok := rec.Excluded[r.Name]; ok {
		status, reason = "excluded", why
	}
	if r == rec.Best {
		status = "recommended"
	}
	return status, reason
}

// WriteRecommendCSV writes one row per run, input order, with its status;
// a pooled run is one row per repetition, each with the pool's status, name
// (recommend.repetition_group) and poolNote (recommend.repetitions), as
// pareto's CSV does.
func WriteRecommendCSV(w io.Writer, rec Recommendation) error {
	var t reportcsv.Table
	for _, r := range rec.Order {
		status, reason := recommendStatus(rec, r)
		members, pool, note := []*Run{r}, "", ""
		if r.Pool != nil {
			members, pool, note = r.Pool.Runs, r.Name, poolNote(r.Pool)
		}
		for _, m := range members {
			if err := AddReportRow(&t, m, reportcsv.Value("recommend.status", status), reportcsv.Value("recommend.reason", reason),
				reportcsv.Value("recommend.repetition_group", pool), reportcsv.Value("recommend.repetitions", note)); err != nil {
				return err
			}
		}
	}
	return t.Write(w)
}

// recommendJSON is recommend --format json.
type recommendJSON struct {
	Recommended *string            `json:"recommended"`
	Prefer      string             `json:"prefer"`
	Front       []string           `json:"front"`
	Warnings    []string           `json:"warnings,omitempty"`
	Runs        []recommendRunJSON `json:"runs"`
}

type recommendRunJSON struct {
	RunID   string              `json:"run_id"`
	Report  string              `json:"report,omitempty"` // "" for a pooled run
	Status  string              `json:"status"`           // recommended, front or excluded
	Reason  string              `json:"reason,omitempty"`
	Metrics map[string]*float64 `json:"metrics"` // by report key; null = missing
	// Repetitions is the pool a pooled run stands for (Set.Pooled); its
	// metrics are the pool's medians.
	Repetitions *RepetitionSummary `json:"repetitions,omitempty"`
}

// WriteRecommendJSON writes rec as JSON, with each run's metrics.
func WriteRecommendJSON(w io.Writer, rec Recommendation, metrics []Metric) error {
	out := recommendJSON{Prefer: rec.Prefer.Key, Front: []string{}, Runs: []recommendRunJSON{}, Warnings: rec.Warnings}
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
			m[mt.Key] = finite(mt.Of(r))
		}
		run := recommendRunJSON{RunID: r.Name, Report: r.Path, Status: status, Reason: reason, Metrics: m}
		if r.Pool != nil {
			s := r.Pool.Summary(metrics)
			run.Repetitions = &s
		}
		out.Runs = append(out.Runs, run)
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
	// BeforeRepetitions and AfterRepetitions summarise a side that is a
	// repetition group (pareto's summary); Warnings name those that
	// disagree.
	BeforeRepetitions *RepetitionSummary `json:"before_repetitions,omitempty"`
	AfterRepetitions  *RepetitionSummary `json:"after_repetitions,omitempty"`
	Warnings          []string           `json:"warnings,omitempty"`
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
	// BeforeRange and AfterRange: min–max of a side of two or more runs.
	BeforeRange *[2]float64 `json:"before_range,omitempty"`
	AfterRange  *[2]float64 `json:"after_range,omitempty"`
	Regressed   bool        `json:"regressed"`
	Note        string      `json:"note,omitempty"`
}

func finite(v float64, ok bool) *float64 {
	if !ok || math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return &v
}

func diffResultJSON(d DiffResult) diffJSON {
	before, after := d.Names()
	out := diffJSON{Before: before, After: after, ThresholdPercent: d.ThresholdPct,
		ValidityRegressed: d.ValidityRegressed, SanityFailed: d.SanityFailed, Regressions: d.Regressions(),
		Changes: []diffChangeJSON{}, Warnings: d.Warnings}
	if d.BeforePool != nil {
		s := d.BeforePool.Summary(DiffMetrics)
		out.BeforeRepetitions = &s
	}
	if d.AfterPool != nil {
		s := d.AfterPool.Summary(DiffMetrics)
		out.AfterRepetitions = &s
	}
	for _, c := range d.Changes {
		out.Changes = append(out.Changes, diffChangeJSON{Metric: c.Metric.Key, Better: c.Metric.Dir.String(),
			Before: finite(c.Before, c.HasBefore), After: finite(c.After, c.HasAfter),
			WorsePercent: finite(c.Worse, c.HasBefore && c.HasAfter), Significant: c.Significant, Test: c.Test, P: finite(c.P, true),
			BeforeCI95: c.BeforeCI, AfterCI95: c.AfterCI, BeforeRange: c.BeforeRange, AfterRange: c.AfterRange, Regressed: c.Regressed, Note: c.Note})
	}
	return out
}

// Names are the sides' names in JSON, CSV and messages: a repetition
// pool's name, else the side's first run's.
func (d DiffResult) Names() (before, after string) {
	before, after = d.Before.Name, d.After.Name
	if d.BeforePool != nil {
		before = d.BeforePool.Name
	}
	if d.AfterPool != nil {
		after = d.AfterPool.Name
	}
	return before, after
}

// WriteDiffJSON writes d as JSON.
func WriteDiffJSON(w io.Writer, d DiffResult) error {
	return writeJSON(w, diffResultJSON(d))
}

// WriteDiffCSV writes one row per tracked metric.
func WriteDiffCSV(w io.Writer, d DiffResult) error {
	var t reportcsv.Table
	for _, c := range diffResultJSON(d).Changes {
		js, err := json.Marshal(c)
		if err != nil {
			return err
		}
		before, after := d.Names()
		lead := []reportcsv.Field{{Key: "before_run", Value: before}, {Key: "after_run", Value: after}}
		if err := t.AddJSON(lead, js); err != nil {
			return err
		}
	}
	return t.Write(w)
}

// WritePlanCSV writes one row per load point.
func WritePlanCSV(w io.Writer, p Plan) error {
	var t reportcsv.Table
	for _, pt := range p.Points {
		js, err := json.Marshal(pt)
		if err != nil {
			return err
		}
		admission := p.AdmissionLimit != nil && p.AdmissionLimit.RunID == pt.RunID
		if err := t.AddJSON([]reportcsv.Field{reportcsv.Value("plan.admission_limit", admission)}, js); err != nil {
			return err
		}
	}
	return t.Write(w)
}

// writeJSON writes v as indented JSON.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
