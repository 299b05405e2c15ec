package deploy

import (
	_ "embed"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/joulemark/joulemark/internal/atomicfile"
)

//go:embed prometheus/prometheus.yml
var prometheusYML string

// Paths in prometheus/prometheus.yml, relative to the config file.
const (
	configRuleFiles = "- rules/*.yml"
	configExporters = "files: [targets/exporters*.yml]"
	configEngines   = "files: [targets/engines*.yml]"
)

// PrometheusConfig returns deploy/prometheus/prometheus.yml with its rule
// files and file_sd target files moved to rulesDir (every *.yml there) and
// targetsDir, as absolute paths: the deploy configuration, runnable from any
// directory (tests, CI, a Prometheus started by hand).
func PrometheusConfig(rulesDir, targetsDir string) (string, error) {
	rules, err := filepath.Abs(rulesDir)
	if err != nil {
		return "", err
	}
	targets, err := filepath.Abs(targetsDir)
	if err != nil {
		return "", err
	}
	cfg := prometheusYML
	for _, r := range []struct{ old, new string }{
		{configRuleFiles, "- " + filepath.Join(rules, "*.yml")},
		{configExporters, "files: [" + filepath.Join(targets, "exporters*.yml") + "]"},
		{configEngines, "files: [" + filepath.Join(targets, "engines*.yml") + "]"},
	} {
		if strings.Count(cfg, r.old) != 1 {
			return "", fmt.Errorf("deploy/prometheus/prometheus.yml: expected one %q", r.old)
		}
		cfg = strings.Replace(cfg, r.old, r.new, 1)
	}
	return cfg, nil
}

// TargetGroup is one file_sd target group.
type TargetGroup struct {
	Targets []string          `yaml:"targets"`
	Labels  map[string]string `yaml:"labels,omitempty"`
}

// WriteTargets writes a file_sd targets file for the deploy config:
// kind "exporters" (joulemark exporters) or "engines" (inference engines'
// /metrics), into targetsDir.
func WriteTargets(targetsDir, kind string, groups []TargetGroup) error {
	if kind != "exporters" && kind != "engines" {
		return fmt.Errorf("targets kind %q: want exporters or engines", kind)
	}
	b, err := yaml.Marshal(groups)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(targetsDir, 0o755); err != nil {
		return err
	}
	return atomicfile.WriteFile(filepath.Join(targetsDir, kind+".yml"), b)
}
