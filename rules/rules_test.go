package rules

import (
	"bytes"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/joulemark/joulemark/internal/contract"
	"github.com/joulemark/joulemark/internal/testkit/testenv"
)

func parse(t *testing.T, name string, b []byte) *rulefmt.RuleGroups {
	t.Helper()
	groups, errs := rulefmt.Parse(b, false, model.UTF8Validation, parser.NewParser(parser.Options{}), slog.New(slog.DiscardHandler))
	if len(errs) > 0 {
		t.Fatalf("%s: %v", name, errs)
	}
	return groups
}

// TestNamesMatchFiles keeps RecordingRuleNames and AlertNames in sync with
// the YAML, and checks All() is one valid rule file with every rule.
func TestNamesMatchFiles(t *testing.T) {
	var records, alerts []string
	for _, n := range FileNames {
		b, err := File(n)
		if err != nil {
			t.Fatal(err)
		}
		for _, g := range parse(t, n, b).Groups {
			for _, r := range g.Rules {
				if r.Record != "" {
					records = append(records, r.Record)
				} else {
					alerts = append(alerts, r.Alert)
				}
			}
		}
	}
	if !slices.Equal(records, RecordingRuleNames) {
		t.Errorf("recording rules in the YAML:\n%q\nRecordingRuleNames:\n%q", records, RecordingRuleNames)
	}
	if !slices.Equal(alerts, AlertNames) {
		t.Errorf("alerts in the YAML %q, AlertNames %q", alerts, AlertNames)
	}
	all := parse(t, "All()", All())
	n := 0
	for _, g := range all.Groups {
		n += len(g.Rules)
	}
	if n != len(records)+len(alerts) {
		t.Errorf("All() holds %d rules, the files %d", n, len(records)+len(alerts))
	}
	var b bytes.Buffer
	if err := Print(&b); err != nil || !bytes.Equal(b.Bytes(), All()) {
		t.Errorf("Print: %v", err)
	}
	if _, err := File("nope.yml"); err == nil {
		t.Error("File(nope.yml) did not fail")
	}
}

// TestPromtool runs promtool check rules on every file and on All(), and
// promtool test rules on testdata/*.test.yml.
func TestPromtool(t *testing.T) {
	promtool := testenv.LookPath(t, "promtool")
	dir := t.TempDir()
	all := filepath.Join(dir, "all.yml")
	if err := os.WriteFile(all, All(), 0o644); err != nil {
		t.Fatal(err)
	}
	check := append(slices.Clone(FileNames), all)
	if out, err := exec.Command(promtool, append([]string{"check", "rules"}, check...)...).CombinedOutput(); err != nil {
		t.Errorf("promtool check rules: %v\n%s", err, out)
	}
	tests, err := filepath.Glob("testdata/*.test.yml")
	if err != nil || len(tests) == 0 {
		t.Fatalf("no promtool test files: %v", err)
	}
	for _, f := range tests {
		out, err := exec.Command(promtool, "test", "rules", f).CombinedOutput()
		if err != nil {
			t.Errorf("promtool test rules %s: %v\n%s", f, err, out)
		}
	}
}

var (
	docRuleName  = regexp.MustCompile(`\b(?:[a-z_]+:joulemark_[a-z0-9_]+|joulemark:[a-z0-9_]+):[a-z0-9_]+\b`)
	docAlertName = regexp.MustCompile(`\bJoulemark[A-Z][A-Za-z]+\b`)
)

// TestDocsNameExistingRules: every recording rule and alert the docs (and
// the README) name exists in the rule files.
func TestDocsNameExistingRules(t *testing.T) {
	files, _ := filepath.Glob("../docs/*.md")
	files = append(files, "../README.md")
	var named int
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range docRuleName.FindAllString(string(b), -1) {
			named++
			if !slices.Contains(RecordingRuleNames, name) {
				t.Errorf("%s names the recording rule %s, which rules/*.yml lacks", f, name)
			}
		}
		for _, name := range docAlertName.FindAllString(string(b), -1) {
			if !slices.Contains(AlertNames, name) {
				t.Errorf("%s names the alert %s, which rules/alerts.yml lacks", f, name)
			}
		}
	}
	if named < 10 {
		t.Errorf("the docs name only %d recording rules: the pattern misses them", named)
	}
}

// TestEngineNamesInContract: every inference-engine metric name a rule's
// expression uses (vllm:..., sglang:..., in a selector or a __name__
// regexp) is one of internal/contract's engine names.
func TestEngineNamesInContract(t *testing.T) {
	engineName := regexp.MustCompile(`\b(?:` + strings.Join(contract.Engines, "|") + `):[a-zA-Z0-9_:]+`)
	var used int
	for _, n := range FileNames {
		b, err := File(n)
		if err != nil {
			t.Fatal(err)
		}
		for _, g := range parse(t, n, b).Groups {
			for _, r := range g.Rules {
				for _, name := range engineName.FindAllString(r.Expr, -1) {
					used++
					if !slices.ContainsFunc(contract.EngineMetrics, func(m contract.EngineMetric) bool { return m.Name == name }) {
						t.Errorf("%s: rule %s%s uses %s, which is not an engine name of internal/contract", n, r.Record, r.Alert, name)
					}
				}
			}
		}
	}
	if used == 0 {
		t.Error("no rule uses an engine metric: the pattern misses them")
	}
}
