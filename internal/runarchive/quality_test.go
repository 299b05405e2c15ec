package runarchive

import (
	"reflect"
	"testing"
)

func TestQualitySummary(t *testing.T) {
	var s QualitySummary
	s.Add(QualityResult{Pass: true})
	s.Add(QualityResult{Failed: []string{"correctness"}, Mismatches: 1})
	s.Add(QualityResult{Failed: []string{"regex", "forbidden"}})
	if s.Requests != 3 || s.Passed != 1 || s.Failed != 2 || *s.PassRate != 1.0/3 || s.Mismatches != 1 ||
		!reflect.DeepEqual(s.FailuresByRule, map[string]int{"correctness": 1, "regex": 1, "forbidden": 1}) {
		t.Errorf("summary %+v", s)
	}
	if got := s.Rules(); !reflect.DeepEqual(got, []string{"correctness", "forbidden", "regex"}) {
		t.Errorf("rules %v", got)
	}
}
