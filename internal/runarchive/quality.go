package runarchive

import (
	"maps"
	"slices"
)

// QualityResult is one request's verdict against its rubric,
// requests.jsonl "quality".
type QualityResult struct {
	Pass bool `json:"pass"`
	// Failed lists the rules the answer broke, in rule order.
	Failed []string `json:"failed_rules,omitempty"`
	// Mismatches counts the correctness workload's wrong answers (0 or 1).
	Mismatches int `json:"mismatches,omitempty"`
}

// QualityWorkloadRubric is QualitySummary.Workload for answers checked
// against a rubric file (workload.quality_file); the correctness workload's
// is contract.WorkloadCorrectness.
const QualityWorkloadRubric = "rubric"

// QualitySummary is the quality of a run's formal requests.
type QualitySummary struct {
	// Workload is contract.WorkloadCorrectness or QualityWorkloadRubric.
	Workload string `json:"workload,omitempty"`
	// Requests is the successful formal requests checked.
	Requests       int            `json:"requests"`
	Passed         int            `json:"passed"`
	Failed         int            `json:"failed"`
	PassRate       *float64       `json:"pass_rate"`
	FailuresByRule map[string]int `json:"failures_by_rule"`
	Mismatches     int            `json:"mismatches"`
}

// Add counts one request's result.
func (s *QualitySummary) Add(r QualityResult) {
	if s.FailuresByRule == nil {
		s.FailuresByRule = map[string]int{}
	}
	s.Requests++
	s.Mismatches += r.Mismatches
	if r.Pass {
		s.Passed++
	} else {
		s.Failed++
	}
	for _, rule := range r.Failed {
		s.FailuresByRule[rule]++
	}
	v := float64(s.Passed) / float64(s.Requests)
	s.PassRate = &v
}

// Rules lists the rules with failures, sorted.
func (s *QualitySummary) Rules() []string { return slices.Sorted(maps.Keys(s.FailuresByRule)) }
