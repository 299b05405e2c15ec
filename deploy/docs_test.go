package deploy

import (
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

var yamlBlock = regexp.MustCompile("(?s)```yaml\n(.*?)```")

// TestDeployDocSnippets: the Prometheus snippets of docs/deploy.md (the
// scrape jobs to copy, the storage block) say what
// deploy/prometheus/prometheus.yml says: each job or block equals the
// file's, so copying one cannot drop a setting (honor_labels) the
// reference has.
func TestDeployDocSnippets(t *testing.T) {
	doc, err := os.ReadFile("../docs/deploy.md")
	if err != nil {
		t.Fatal(err)
	}
	ref := promYAML(t, "prometheus/prometheus.yml")
	jobs := map[string]any{}
	for _, j := range ref["scrape_configs"].([]any) {
		m := j.(map[string]any)
		jobs[m["job_name"].(string)] = m
	}
	var checked int
	for _, m := range yamlBlock.FindAllStringSubmatch(string(doc), -1) {
		var block map[string]any
		if err := yaml.Unmarshal([]byte(m[1]), &block); err != nil {
			continue // not a Prometheus snippet (values of another chart, ...)
		}
		if scs, ok := block["scrape_configs"].([]any); ok {
			for _, sc := range scs {
				job := sc.(map[string]any)
				name, _ := job["job_name"].(string)
				checked++
				if want, ok := jobs[name]; !ok {
					t.Errorf("docs/deploy.md: job %q is not in prometheus.yml", name)
				} else if !reflect.DeepEqual(job, want) {
					t.Errorf("docs/deploy.md: job %q differs from prometheus.yml:\n doc  %v\n file %v", name, job, want)
				}
			}
		}
		if st, ok := block["storage"]; ok {
			checked++
			if !reflect.DeepEqual(st, ref["storage"]) {
				t.Errorf("docs/deploy.md: storage %v, prometheus.yml has %v", st, ref["storage"])
			}
		}
	}
	if checked < 3 {
		t.Errorf("checked %d snippets of docs/deploy.md, want the two scrape jobs and the storage block", checked)
	}
	if !strings.Contains(string(doc), "honor_labels: true") {
		t.Error("docs/deploy.md never says honor_labels: true")
	}
}

func promYAML(t *testing.T, path string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := yaml.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return m
}
