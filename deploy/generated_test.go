package deploy

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

const (
	rulesDir           = "../rules"
	prometheusRulePath = "kubernetes/prometheusrule.yaml"
)

// TestPrometheusRuleUpToDate fails when the committed PrometheusRule differs
// from one generated from rules/*.yml.
func TestPrometheusRuleUpToDate(t *testing.T) {
	files, err := ReadRuleFiles(rulesDir)
	if err != nil {
		t.Fatal(err)
	}
	want, err := PrometheusRule(files)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(prometheusRulePath)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from rules/*.yml; run `go generate ./deploy` and commit", prometheusRulePath)
	}
}

// TestPrometheusRuleCarriesEveryRule: the generated object holds every rule
// of every source file, and its groups are a valid Prometheus rule file.
func TestPrometheusRuleCarriesEveryRule(t *testing.T) {
	files, err := ReadRuleFiles(rulesDir)
	if err != nil {
		t.Fatal(err)
	}
	b, err := PrometheusRule(files)
	if err != nil {
		t.Fatal(err)
	}
	var obj struct {
		Spec struct {
			Groups []map[string]any `yaml:"groups"`
		} `yaml:"spec"`
	}
	if err := yaml.Unmarshal(b, &obj); err != nil {
		t.Fatal(err)
	}
	asRuleFile, err := yaml.Marshal(map[string]any{"groups": obj.Spec.Groups})
	if err != nil {
		t.Fatal(err)
	}
	if err := ValidateRules(asRuleFile); err != nil {
		t.Fatalf("spec.groups is not a valid rule file: %v", err)
	}
	count := func(data []byte) (n int) {
		var f struct {
			Groups []struct {
				Rules []map[string]any `yaml:"rules"`
			} `yaml:"groups"`
		}
		if err := yaml.Unmarshal(data, &f); err != nil {
			t.Fatal(err)
		}
		for _, g := range f.Groups {
			n += len(g.Rules)
		}
		return n
	}
	var want int
	for _, f := range files {
		want += count(f.Data)
	}
	if got := count(asRuleFile); got != want || want == 0 {
		t.Errorf("PrometheusRule has %d rules, the rule files %d", got, want)
	}
}

func TestReadRuleFilesErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := ReadRuleFiles(dir); err == nil || !strings.Contains(err.Error(), "no rule files") {
		t.Errorf("empty dir: err = %v", err)
	}
	write := func(name, s string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("ok.yml", "groups:\n- name: g\n  rules:\n  - record: a:b:sum\n    expr: sum(x)\n")
	write("test.yml", "rule_files: [ok.yml]\ntests: []\n")
	files, err := ReadRuleFiles(dir)
	if err != nil || len(files) != 1 || files[0].Name != "ok.yml" {
		t.Fatalf("ReadRuleFiles = %v, %v; want ok.yml only", files, err)
	}
	write("dup.yml", "groups:\n- name: g\n  rules:\n  - record: c:d:sum\n    expr: sum(y)\n")
	files, err = ReadRuleFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := PrometheusRule(files); err == nil || !strings.Contains(err.Error(), `"g"`) {
		t.Errorf("duplicate group: err = %v", err)
	}
	write("bad.yml", "groups:\n- name: h\n  rules:\n  - record: e\n    expr: sum(\n")
	if _, err := ReadRuleFiles(dir); err == nil || !strings.Contains(err.Error(), "bad.yml") {
		t.Errorf("invalid rule file: err = %v, want one naming bad.yml", err)
	}
}
