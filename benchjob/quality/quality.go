// Package quality checks what a model answered, so a fast endpoint that
// quietly serves a degraded model cannot win: a YAML rubric per prompt
// (contains_all, regex, forbidden) and the LLMPerf-style correctness
// workload (numbers spelled out in words, to be answered in digits).
package quality

import (
	"bytes"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/joulemark/joulemark/internal/contract"
	"github.com/joulemark/joulemark/internal/runarchive"
)

// Rule names, as counted in failures_by_rule.
const (
	RuleContainsAll = "contains_all"
	RuleRegex       = "regex"
	RuleForbidden   = "forbidden"
	RuleCorrectness = contract.WorkloadCorrectness // the expected number is not in the answer
)

// Check is the rubric of one prompt. Every listed condition must hold.
type Check struct {
	// ContainsAll: every string must occur in the answer.
	ContainsAll []string `yaml:"contains_all,omitempty" json:"contains_all,omitempty"`
	// Regex (Go RE2 syntax) must match somewhere in the answer.
	Regex string `yaml:"regex,omitempty" json:"regex,omitempty"`
	// Forbidden: none of these strings may occur.
	Forbidden []string `yaml:"forbidden,omitempty" json:"forbidden,omitempty"`
	// Expect is the correctness workload's expected number, in digits.
	Expect string `yaml:"-" json:"expect,omitempty"`

	res []*regexp.Regexp // compiled: Regex, plus the default's when merged
}

// compile checks and compiles the rubric.
func (c *Check) compile() error {
	if c.Regex != "" {
		re, err := regexp.Compile(c.Regex)
		if err != nil {
			return fmt.Errorf("regex %q: %w", c.Regex, err)
		}
		c.res = []*regexp.Regexp{re}
	}
	return nil
}

func (c *Check) empty() bool {
	return len(c.ContainsAll) == 0 && c.Regex == "" && len(c.Forbidden) == 0 && c.Expect == ""
}

// Evaluate applies the rubric to an answer: its verdict as the archive
// stores it.
func (c *Check) Evaluate(answer string) runarchive.QualityResult {
	var failed []string
	for _, s := range c.ContainsAll {
		if !strings.Contains(answer, s) {
			failed = append(failed, RuleContainsAll)
			break
		}
	}
	for _, re := range c.compiled() {
		if !re.MatchString(answer) {
			failed = append(failed, RuleRegex)
			break
		}
	}
	for _, s := range c.Forbidden {
		if strings.Contains(answer, s) {
			failed = append(failed, RuleForbidden)
			break
		}
	}
	r := runarchive.QualityResult{}
	if c.Expect != "" && !containsNumber(answer, c.Expect) {
		failed = append(failed, RuleCorrectness)
		r.Mismatches = 1
	}
	r.Pass, r.Failed = len(failed) == 0, failed
	return r
}

// containsNumber reports whether the answer holds the number want as a
// whole number (thousands separators allowed: 12,345 and 12 345 count).
func containsNumber(answer, want string) bool {
	norm := strings.NewReplacer(",", "", "\u00a0", "", "_", "").Replace(answer)
	for _, m := range numberRE.FindAllString(norm, -1) {
		if strings.ReplaceAll(m, " ", "") == want {
			return true
		}
	}
	return false
}

var numberRE = regexp.MustCompile(`\d+(?: \d{3})*`)

// Rubric is a quality_file: a default check for every prompt and per-prompt
// checks by prompt index (0-based, in the order the workload sends them; a
// dataset's line order).
type Rubric struct {
	All     *Check        `yaml:"all,omitempty"`
	Prompts []PromptCheck `yaml:"prompts"`
	byIndex map[int]*Check
}

// PromptCheck is the rubric of the prompt at Index.
type PromptCheck struct {
	Index int `yaml:"index"`
	Check `yaml:",inline"`
}

// LoadRubric reads and checks a quality_file (strict YAML: unknown keys are
// errors).
func LoadRubric(path string) (*Rubric, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("quality_file: %w", err)
	}
	return ParseRubric(b, path)
}

// ParseRubric parses a quality_file's content; name is used in errors.
func ParseRubric(b []byte, name string) (*Rubric, error) {
	var r Rubric
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&r); err != nil {
		return nil, fmt.Errorf("quality_file %s: %w", name, err)
	}
	r.byIndex = map[int]*Check{}
	if r.All != nil {
		if err := r.All.compile(); err != nil {
			return nil, fmt.Errorf("quality_file %s: all: %w", name, err)
		}
	}
	for i := range r.Prompts {
		pc := &r.Prompts[i]
		if pc.Index < 0 {
			return nil, fmt.Errorf("quality_file %s: prompts[%d]: index %d is negative", name, i, pc.Index)
		}
		if _, dup := r.byIndex[pc.Index]; dup {
			return nil, fmt.Errorf("quality_file %s: prompts[%d]: index %d given twice", name, i, pc.Index)
		}
		if pc.empty() {
			return nil, fmt.Errorf("quality_file %s: prompts[%d] (index %d) has no contains_all, regex or forbidden", name, i, pc.Index)
		}
		if err := pc.compile(); err != nil {
			return nil, fmt.Errorf("quality_file %s: prompts[%d]: %w", name, i, err)
		}
		r.byIndex[pc.Index] = &pc.Check
	}
	if r.All == nil && len(r.Prompts) == 0 {
		return nil, fmt.Errorf("quality_file %s: neither all nor prompts", name)
	}
	return &r, nil
}

// For returns the check of the prompt at index: its own merged with the
// default (conditions of both apply); nil when neither has one.
func (r *Rubric) For(index int) *Check {
	own := r.byIndex[index]
	switch {
	case own == nil && r.All == nil:
		return nil
	case own == nil:
		return r.All
	case r.All == nil:
		return own
	}
	return &Check{
		ContainsAll: append(slices.Clone(r.All.ContainsAll), own.ContainsAll...),
		Forbidden:   append(slices.Clone(r.All.Forbidden), own.Forbidden...),
		Regex:       own.Regex,
		res:         append(slices.Clone(r.All.res), own.res...),
	}
}

// Merge returns a check requiring both a's and b's conditions.
func Merge(a, b *Check) *Check {
	c := &Check{
		ContainsAll: append(slices.Clone(a.ContainsAll), b.ContainsAll...),
		Forbidden:   append(slices.Clone(a.Forbidden), b.Forbidden...),
		Regex:       a.Regex,
		res:         append(slices.Clone(a.compiled()), b.compiled()...),
		Expect:      a.Expect,
	}
	if c.Regex == "" {
		c.Regex = b.Regex
	}
	if c.Expect == "" {
		c.Expect = b.Expect
	}
	return c
}

// compiled returns the check's regexes, compiling Regex when needed.
func (c *Check) compiled() []*regexp.Regexp {
	if c.res == nil && c.Regex != "" {
		return []*regexp.Regexp{regexp.MustCompile(c.Regex)}
	}
	return c.res
}
