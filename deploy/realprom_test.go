package deploy

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	"go.yaml.in/yaml/v3"

	"github.com/joulemark/joulemark/internal/testkit/realprom"
)

// metricsServer serves a fixed exposition on /metrics from 127.0.0.1.
func metricsServer(t *testing.T, body string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		fmt.Fprint(w, body)
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// TestDeployConfigOnRealPrometheus runs Debian's Prometheus with the deploy
// configuration and rules: it must start, load every rule group, scrape an
// exporter and an engine through file_sd, and label them with node.
func TestDeployConfigOnRealPrometheus(t *testing.T) {
	exporter := metricsServer(t, "# TYPE joulemark_gpu_power_watts gauge\njoulemark_gpu_power_watts{gpu=\"0\",uuid=\"GPU-0\"} 312.5\n")
	engine := metricsServer(t, "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{model_name=\"m\"} 3\n")
	targets := t.TempDir()
	if err := WriteTargets(targets, "exporters", []TargetGroup{{Targets: []string{exporter}}}); err != nil {
		t.Fatal(err)
	}
	if err := WriteTargets(targets, "engines", []TargetGroup{{Targets: []string{engine}, Labels: map[string]string{"node": "gpu-node-1"}}}); err != nil {
		t.Fatal(err)
	}
	cfg, err := PrometheusConfig(rulesDir, targets)
	if err != nil {
		t.Fatal(err)
	}
	srv := realprom.Start(t, cfg)
	client, err := api.NewClient(api.Config{Address: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	prom := v1.NewAPI(client)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	rules, err := prom.Rules(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	files, err := ReadRuleFiles(rulesDir)
	if err != nil {
		t.Fatal(err)
	}
	var wantGroups int
	for _, f := range files {
		var rf struct {
			Groups []any `yaml:"groups"`
		}
		if err := yaml.Unmarshal(f.Data, &rf); err != nil {
			t.Fatal(err)
		}
		wantGroups += len(rf.Groups)
	}
	if len(rules.Groups) != wantGroups || wantGroups == 0 {
		t.Errorf("Prometheus loaded %d rule groups, rules/*.yml has %d\n%s", len(rules.Groups), wantGroups, srv.Log())
	}

	for _, tc := range []struct{ query, job, node string }{
		{"joulemark_gpu_power_watts", "joulemark-exporter", "127.0.0.1"},
		{"vllm:num_requests_running", "inference-engine", "gpu-node-1"},
	} {
		var got model.Vector
		for ctx.Err() == nil {
			v, _, _, err := prom.Query(ctx, tc.query, time.Now())
			if err == nil {
				got, _ = v.(model.Vector)
			}
			if len(got) > 0 {
				break
			}
			time.Sleep(250 * time.Millisecond)
		}
		if len(got) != 1 {
			t.Fatalf("%s: not scraped within 30 s: %v\n%s", tc.query, got, srv.Log())
		}
		m := got[0].Metric
		if string(m["job"]) != tc.job || string(m["node"]) != tc.node {
			t.Errorf("%s: job=%q node=%q, want %q and %q", tc.query, m["job"], m["node"], tc.job, tc.node)
		}
	}
}

func TestPrometheusConfigPaths(t *testing.T) {
	cfg, err := PrometheusConfig("../rules", "/tmp/targets")
	if err != nil {
		t.Fatal(err)
	}
	abs, _ := filepath.Abs("../rules")
	for _, want := range []string{"- " + abs + "/*.yml", "files: [/tmp/targets/exporters*.yml]", "files: [/tmp/targets/engines*.yml]", "out_of_order_time_window"} {
		if !strings.Contains(cfg, want) {
			t.Errorf("config lacks %q", want)
		}
	}
	if err := WriteTargets(t.TempDir(), "gpus", nil); err == nil {
		t.Error("WriteTargets accepted kind gpus")
	}
}
