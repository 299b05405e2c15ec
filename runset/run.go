// Package runset answers "which configuration should we run" from finished
// runs' reports: Pareto classification, constrained recommendation,
// regression gates between two reports, capacity planning from a load sweep,
// and the sanity of the model's outputs (docs/experiments.md).
//
// Reports are read with encoding/json into report.Report; a nil pointer is a
// missing figure, never 0.
package runset

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/joulemark/joulemark/internal/contract"
	"github.com/joulemark/joulemark/internal/runarchive"
	"github.com/joulemark/joulemark/report"
	"github.com/joulemark/joulemark/report/outputsanity"
)

// Run is one report read from disk, with the sanity of its outputs when the
// run archive was found beside it.
type Run struct {
	Path   string               // the report file
	Name   string               // run_id, or the file path when the report has none
	Report report.Report        // the decoded report
	Raw    map[string]any       // the same document undecoded, for lookups by key (--group-by)
	Sanity *report.OutputCounts // nil when no requests.jsonl was found
	Load   *LoadPoint           // the configured load from manifest.json; nil when not found
	// SanityPath is the requests.jsonl the sanity counts come from.
	SanityPath string
	// Pool, when set, makes this run stand for a repetition pool
	// (Set.Pooled): its metrics are the pool's medians (Metric.Of).
	Pool *RepetitionPool
}

// LoadOptions say where to look for each run's archive.
type LoadOptions struct {
	// RunsDir, when set, is searched for RunsDir/<run_id>/requests.jsonl
	// (and manifest.json) when neither the report's own directory nor the
	// run archive holding it (runs/<run_id>/report/) has them.
	RunsDir string
}

// LoadReport reads one report.json and, when it can find it, the run's
// requests.jsonl for the output sanity counts.
func LoadReport(path string, opts LoadOptions) (*Run, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read report: %w", err)
	}
	rep, raw, err := report.DecodeDocument(data)
	if err != nil {
		return nil, fmt.Errorf("report %s: %w", path, err)
	}
	r := &Run{Path: path, Report: *rep, Raw: raw}
	if err := checkPlausible(&r.Report); err != nil {
		return nil, fmt.Errorf("report %s: %w", path, err)
	}
	r.Name = r.Report.RunID
	if r.Name == "" {
		r.Name = path
	}
	for _, arch := range archives(path, r.Report.RunID, opts) {
		if err := r.readArchive(arch); err != nil {
			return nil, fmt.Errorf("report %s: %w", path, err)
		}
	}
	return r, nil
}

// checkPlausible refuses a report no analyze run can write: a run_id that
// is no run id (path components: it names files), a tracked figure out of
// its bounds (Metric.Check).
func checkPlausible(r *report.Report) error {
	if err := contract.ValidateRunID(r.RunID); err != nil {
		return fmt.Errorf("run_id: %w", err)
	}
	var errs []error
	for _, m := range CheckedMetrics {
		if err := m.Check(r); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// archives are where the run's archive (requests.jsonl, manifest.json) may
// be: beside the report; the directory above it when the report is in the
// archive's report/ (runs/<run_id>/report/report.json, as the demo writes
// it) and that archive's manifest names the run; then RunsDir/<run_id>.
func archives(reportPath, runID string, opts LoadOptions) []*runarchive.Run {
	dir := filepath.Dir(reportPath)
	c := []*runarchive.Run{{ID: runID, Dir: dir}}
	if up := (&runarchive.Run{ID: runID, Dir: filepath.Dir(dir)}); filepath.Base(dir) == runarchive.ReportDir && runID != "" {
		if m, err := up.ReadManifest(); err == nil && m.RunID == runID {
			c = append(c, up)
		}
	}
	if opts.RunsDir != "" && contract.ValidateRunID(runID) == nil {
		c = append(c, &runarchive.Run{ID: runID, Dir: filepath.Join(opts.RunsDir, runID)})
	}
	return c
}

// readArchive takes the sanity counts and the configured load from arch
// where they are still missing. A missing file is no error; a manifest of
// another run is ignored.
func (r *Run) readArchive(arch *runarchive.Run) error {
	if r.Sanity == nil {
		s, err := outputsanity.ReadRequests(arch)
		switch {
		case errors.Is(err, fs.ErrNotExist), errors.Is(err, runarchive.ErrIncomplete):
		case err != nil:
			return err
		default:
			r.Sanity, r.SanityPath = &s, arch.Path(runarchive.RequestsFile)
		}
	}
	if r.Load == nil {
		m, err := arch.ReadManifest()
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			return err
		case m.RunID == r.Report.RunID || r.Report.RunID == "":
			r.Load = &LoadPoint{Mode: m.Load.Mode, Concurrency: m.Load.Concurrency, TargetRate: m.Load.TargetRate}
		}
	}
	return nil
}

// LoadPoint is the configured load of a run, from the `load` section of its
// archive's manifest.json (runarchive.LoadInfo).
type LoadPoint struct {
	Mode        string  `json:"mode"` // closed, poisson, gamma, trace
	Concurrency int     `json:"concurrency,omitempty"`
	TargetRate  float64 `json:"target_rate,omitempty"`
}

// String is "concurrency 16", "rate 5 req/s (poisson)" or the mode, as
// contract.RunIdentity.Load writes a run's identity; "-" when unknown.
func (l *LoadPoint) String() string {
	if l == nil {
		return "-"
	}
	if s := (contract.RunIdentity{LoadMode: l.Mode, Concurrency: l.Concurrency, Rate: l.TargetRate}).Load(); s != "" {
		return s
	}
	return "-"
}

// loadReports reads several reports, each argument a report (ResolveReport)
// or, for a run id that names none, a repetition group's (ResolveGroup).
// Two reports with the same run_id are an error: one of them would
// silently shadow the other in every table.
func loadReports(paths []string, opts LoadOptions) ([]*Run, error) {
	if len(paths) == 0 {
		return nil, errors.New("no report given")
	}
	seen := map[string]string{}
	var runs []*Run
	for _, arg := range paths {
		ps, err := resolveArg(arg, opts.RunsDir)
		if err != nil {
			return nil, err
		}
		for _, p := range ps {
			r, err := LoadReport(p, opts)
			if err != nil {
				return nil, err
			}
			if prev, ok := seen[r.Name]; ok {
				return nil, fmt.Errorf("reports %s and %s both have run_id %q", prev, p, r.Name)
			}
			seen[r.Name] = p
			runs = append(runs, r)
		}
	}
	return runs, nil
}

// ErrNoReport is wrapped by ResolveReport's error when an argument names
// no report (a usage error).
var ErrNoReport = errors.New("no report found")

// ResolveReport finds the report.json an argument names: the file itself,
// a directory holding report.json (analyze --out) or report/report.json
// (a run archive), or a run id looked up as <runsDir>/<id>/report/ and
// reports/<id>/ (analyze's default --out).
func ResolveReport(arg, runsDir string) (string, error) {
	st, err := os.Stat(arg)
	if err == nil && !st.IsDir() {
		return arg, nil
	}
	var tried []string
	if err == nil {
		tried = []string{filepath.Join(arg, report.FileJSON), filepath.Join(arg, "report", report.FileJSON)}
	} else if contract.ValidateRunID(arg) == nil {
		if runsDir != "" {
			tried = append(tried, filepath.Join(runsDir, arg, "report", report.FileJSON))
		}
		tried = append(tried, filepath.Join("reports", arg, report.FileJSON))
	} else {
		return "", fmt.Errorf("report %s: %w (%w)", arg, ErrNoReport, err)
	}
	for _, p := range tried {
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p, nil
		}
	}
	return "", fmt.Errorf("report %s: %w (tried %s)", arg, ErrNoReport, strings.Join(tried, ", "))
}

// Lookup returns the value at a dotted key of the report document
// ("scenario", "measurement.energy_source") as text, and whether it exists.
// "scenario" falls back to run.scenario, the bench's, for reports whose
// analyze was given no --scenario.
func (r *Run) Lookup(key string) (string, bool) {
	v, ok := r.lookup(key)
	if key == "scenario" && (!ok || v == "") {
		return r.lookup("run.scenario")
	}
	return v, ok
}

func (r *Run) lookup(key string) (string, bool) {
	var cur any = r.Raw
	for part := range strings.SplitSeq(key, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return "", false
		}
		if cur, ok = m[part]; !ok {
			return "", false
		}
	}
	switch v := cur.(type) {
	case nil:
		return "", false
	case string:
		return v, true
	case json.Number, bool:
		return fmt.Sprint(v), true
	default:
		b, _ := json.Marshal(v)
		return string(b), true
	}
}

// ExcludingFlags returns the codes of the flags that make the run invalid.
func (r *Run) ExcludingFlags() []string {
	var codes []string
	for _, f := range r.Report.Flags {
		if f.Excluding {
			codes = append(codes, f.Code)
		}
	}
	return codes
}

// InvalidReason says why the run is excluded from formal results, or "" when
// it is valid.
func (r *Run) InvalidReason() string {
	if r.Pool != nil && len(r.Pool.Valid) == 0 {
		return fmt.Sprintf("no valid repetition of %d", len(r.Pool.Runs))
	}
	if r.Pool != nil || r.Report.Valid {
		return ""
	}
	if codes := r.ExcludingFlags(); len(codes) > 0 {
		return "invalid: " + strings.Join(codes, ", ")
	}
	return "invalid"
}
