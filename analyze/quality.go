package analyze

import (
	"fmt"
	"strings"

	"github.com/joulemark/joulemark/internal/contract"
	"github.com/joulemark/joulemark/internal/runarchive"
	"github.com/joulemark/joulemark/report"
)

// addQuality puts the archive's quality verdicts s into the report, when
// any answer was checked, and flags a pass rate under minPassRate; m, the
// archive's manifest (nil: none), names the workload.
func addQuality(r *report.Report, s runarchive.QualitySummary, m *runarchive.Manifest, minPassRate float64) {
	if s.Requests == 0 {
		return
	}
	s.Workload = runarchive.QualityWorkloadRubric
	if m != nil && m.WorkloadKind() == contract.WorkloadCorrectness {
		s.Workload = contract.WorkloadCorrectness
	}
	r.Quality = &report.Quality{QualitySummary: s, MinPassRate: minPassRate}
	if *s.PassRate < minPassRate {
		var rules []string
		for _, k := range s.Rules() {
			rules = append(rules, fmt.Sprintf("%s %d", k, s.FailuresByRule[k]))
		}
		r.Flags = append(r.Flags, report.Flag{Code: contract.FlagQualityLow, Excluding: true, Message: fmt.Sprintf(
			"%d of %d checked answers failed (pass rate %.1f%% < %.1f%%, --min-quality; %s)",
			s.Failed, s.Requests, 100**s.PassRate, 100*minPassRate, strings.Join(rules, ", "))})
		r.Valid = false
	}
}

// qualityMarkdown is report.md's quality section.
func qualityMarkdown(p func(string, ...any), r *report.Report) {
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
