package deploy

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/config"
	_ "github.com/prometheus/prometheus/discovery/file" // file_sd_configs
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/relabel"

	"github.com/joulemark/joulemark/internal/testkit/testenv"
)

// promDir lays out deploy/prometheus as Prometheus sees it in compose:
// the config, its targets, and the repository's rules under rules/.
func promDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	copyFile := func(src, dst string) {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	copyFile("prometheus/prometheus.yml", filepath.Join(dir, "prometheus.yml"))
	targets, _ := filepath.Glob("prometheus/targets/*.yml")
	for _, f := range targets {
		copyFile(f, filepath.Join(dir, "targets", filepath.Base(f)))
	}
	files, err := ReadRuleFiles(rulesDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		copyFile(filepath.Join(rulesDir, f.Name), filepath.Join(dir, "rules", f.Name))
	}
	return dir
}

// TestPromtoolCheckConfig runs Debian's promtool on the deploy config, with
// the rule files it loads.
func TestPromtoolCheckConfig(t *testing.T) {
	promtool := testenv.LookPath(t, "promtool")
	dir := promDir(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, promtool, "check", "config", "prometheus.yml")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("promtool check config: %v\n%s", err, out)
	}
	files, _ := ReadRuleFiles(rulesDir)
	for _, f := range files {
		if !bytes.Contains(out, []byte("rules/"+f.Name)) {
			t.Errorf("promtool did not check rules/%s:\n%s", f.Name, out)
		}
	}
	if bytes.Contains(out, []byte("0 rule files found")) {
		t.Errorf("promtool found no rule files:\n%s", out)
	}
}

// TestPrometheusConfig loads the config with Prometheus' own loader and
// checks what joulemark relies on.
func TestPrometheusConfig(t *testing.T) {
	dir := promDir(t)
	cfg, err := config.LoadFile(filepath.Join(dir, "prometheus.yml"), false, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.StorageConfig.TSDBConfig == nil || cfg.StorageConfig.TSDBConfig.OutOfOrderTimeWindow < int64(time.Hour/time.Millisecond) {
		t.Error("storage.tsdb.out_of_order_time_window must be set (per-request samples arrive out of order)")
	}
	if len(cfg.RuleFiles) == 0 {
		t.Error("no rule_files")
	}
	scs, err := cfg.GetScrapeConfigs()
	if err != nil {
		t.Fatal(err)
	}
	jobs := map[string]*config.ScrapeConfig{}
	for _, sc := range scs {
		jobs[sc.JobName] = sc
	}
	exp, eng := jobs["joulemark-exporter"], jobs["inference-engine"]
	if exp == nil || eng == nil {
		t.Fatalf("want jobs joulemark-exporter and inference-engine, have %v", jobs)
	}
	if time.Duration(exp.ScrapeInterval) != time.Second {
		t.Errorf("exporter scrape interval %v, want 1s", exp.ScrapeInterval)
	}
	// The alert JoulemarkExporterDown selects up{job=~"joulemark.*"}.
	if !strings.HasPrefix(exp.JobName, "joulemark") {
		t.Errorf("exporter job %q does not match the rules' job=~\"joulemark.*\"", exp.JobName)
	}

	// node label: the target's host unless the target sets node.
	for _, tc := range []struct{ in, node string }{
		{"__address__=exporter:9402", "exporter"},
		{"__address__=10.0.0.7:9402", "10.0.0.7"},
		{"__address__=[fd00::7]:9402", "fd00::7"},
		{"__address__=gpu-a", "gpu-a"},
		{"__address__=exporter:9402,node=gpu-node-1", "gpu-node-1"},
	} {
		for _, sc := range []*config.ScrapeConfig{exp, eng} {
			lb := labels.NewBuilder(labels.EmptyLabels())
			for _, kv := range strings.Split(tc.in, ",") {
				k, v, _ := strings.Cut(kv, "=")
				lb.Set(k, v)
			}
			if !relabel.ProcessBuilder(lb, sc.RelabelConfigs...) {
				t.Fatalf("%s: target %s dropped", sc.JobName, tc.in)
			}
			if got := lb.Get("node"); got != tc.node {
				t.Errorf("%s: target %s: node=%q, want %q", sc.JobName, tc.in, got, tc.node)
			}
		}
	}
}
