package analyze

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/joulemark/joulemark/analyze/quality"
	"github.com/joulemark/joulemark/internal/contract"
	"github.com/joulemark/joulemark/internal/runarchive"
)

// Quality is report.json "quality": the successful formal answers checked
// against their rubric (correctness workload or workload.quality_file),
// from the archive's requests.jsonl. Absent when no answer was checked.
type Quality struct {
	quality.Summary
	MinPassRate float64 `json:"min_pass_rate"`
}

// ReadQuality sums the quality verdicts of the successful formal requests
// in requests.jsonl; Requests is 0 when none carries one.
func ReadQuality(r io.Reader, src string) (quality.Summary, error) {
	var s quality.Summary
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
	for line := 1; sc.Scan(); line++ {
		var rec struct {
			Phase   string          `json:"phase"`
			Success bool            `json:"success"`
			Quality *quality.Result `json:"quality"`
		}
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			return s, fmt.Errorf("reading quality from %s: line %d: %w", src, line, err)
		}
		if rec.Phase == "formal" && rec.Success && rec.Quality != nil {
			s.Add(*rec.Quality)
		}
	}
	if err := sc.Err(); err != nil {
		return s, fmt.Errorf("reading quality from %s: %w", src, err)
	}
	return s, nil
}

// addQuality reads the archive's quality verdicts into the report and flags
// a pass rate under minPassRate.
func addQuality(r *Report, arch *runarchive.Run, minPassRate float64) error {
	f, err := arch.OpenRequests()
	if err != nil {
		return err
	}
	defer f.Close()
	s, err := ReadQuality(f, f.Name())
	if err != nil || s.Requests == 0 {
		return err
	}
	if m, err := arch.ReadManifest(); err == nil {
		if m.Config != nil {
			if w, ok := m.Config["workload"].(map[string]any); ok && w["kind"] == "correctness" {
				s.Workload = "correctness"
			}
		}
	}
	if s.Workload == "" {
		s.Workload = "rubric"
	}
	r.Quality = &Quality{Summary: s, MinPassRate: minPassRate}
	if *s.PassRate < minPassRate {
		var rules []string
		for _, k := range s.Rules() {
			rules = append(rules, fmt.Sprintf("%s %d", k, s.FailuresByRule[k]))
		}
		r.Flags = append(r.Flags, Flag{Code: contract.FlagQualityLow, Excluding: true, Message: fmt.Sprintf(
			"%d of %d checked answers failed (pass rate %.1f%% < %.1f%%, --min-quality; %s)",
			s.Failed, s.Requests, 100**s.PassRate, 100*minPassRate, strings.Join(rules, ", "))})
		r.Valid = false
	}
	return nil
}

// qualityMarkdown is report.md's quality section.
func qualityMarkdown(p func(string, ...any), r *Report) {
	q := r.Quality
	if q == nil {
		return
	}
	p("## Answer quality (%s)\n\n", q.Workload)
	p("| checked | passed | failed | pass rate | threshold | mismatches |\n|---:|---:|---:|---:|---:|---:|\n")
	p("| %d | %d | %d | %s | %.1f%% | %d |\n\n", q.Requests, q.Passed, q.Failed, scaled(q.PassRate, 100, "%.1f%%"), 100*q.MinPassRate, q.Mismatches)
	if len(q.FailuresByRule) > 0 {
		var rules []string
		for _, k := range q.Rules() {
			rules = append(rules, fmt.Sprintf("`%s` %d", k, q.FailuresByRule[k]))
		}
		p("Failures by rule: %s.\n\n", strings.Join(rules, ", "))
	}
}
