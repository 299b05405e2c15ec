package report

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Diagnosis rules (the LLMPerf analysis), each judged on the situation a
// user would name and reported with the numbers behind its verdict and the
// thresholds they crossed (docs/analyze.md, "Diagnosis").
const (
	RuleClientBound = "client_bound" // requests held outside the engine while the GPUs idle
	RuleKVEvictions = "kv_evictions" // preemptions near a full KV cache
	RuleQueueing    = "queueing"     // requests wait while the engine runs at its batch or KV limit
	RulePrefillSlow = "prefill_slow" // TTFT over its SLO while nothing waits
)

// Diagnosis is report.json "diagnosis".
type Diagnosis struct {
	// Healthy: no rule fired (rules skipped for lack of data are listed in
	// Skipped and do not count).
	Healthy  bool              `json:"healthy"`
	Findings []Finding         `json:"findings"`
	Skipped  map[string]string `json:"skipped,omitempty"` // rule → the data it lacked
}

// Finding is one rule that fired: its verdict, the evidence (the run's
// figures) and the thresholds those figures crossed.
type Finding struct {
	Rule       string             `json:"rule"`
	Verdict    string             `json:"verdict"`
	Evidence   map[string]float64 `json:"evidence"`
	Thresholds map[string]float64 `json:"thresholds"`
}

// thresholdOps are the suffixes of a threshold's key: the figure it
// names, the comparison that crosses it and how the report writes it.
var thresholdOps = []struct {
	suffix, sign string
	crossed      func(v, th float64) bool
}{
	{"_at_least", "≥", func(v, th float64) bool { return v >= th }},
	{"_below", "<", func(v, th float64) bool { return v < th }},
	{"_above", ">", func(v, th float64) bool { return v > th }},
}

// ThresholdFigure splits a threshold key into the evidence figure it names
// and its comparison sign; ok is false for a key without a known suffix.
func ThresholdFigure(key string) (figure, sign string, crossed func(v, th float64) bool, ok bool) {
	for _, op := range thresholdOps {
		if name, found := strings.CutSuffix(key, op.suffix); found {
			return name, op.sign, op.crossed, true
		}
	}
	return "", "", nil, false
}

// CheckThresholds reports a threshold of the finding that names no figure
// of its evidence (<figure>_at_least, _below, _above) or that its figure
// did not cross: a finding lists only the conditions that held.
func (f Finding) CheckThresholds() error {
	for _, k := range slices.Sorted(maps.Keys(f.Thresholds)) {
		th := f.Thresholds[k]
		figure, _, crossed, ok := ThresholdFigure(k)
		if !ok {
			return fmt.Errorf("%s: threshold %s has no _at_least, _below or _above suffix", f.Rule, k)
		}
		v, ok := f.Evidence[figure]
		if !ok {
			return fmt.Errorf("%s: threshold %s names no figure of the evidence", f.Rule, k)
		}
		if !crossed(v, th) {
			return fmt.Errorf("%s: threshold %s %g listed, but %s is %g", f.Rule, k, th, figure, v)
		}
	}
	return nil
}
