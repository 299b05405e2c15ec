package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func parseBench(t *testing.T, args ...string) (*BenchCmd, error) {
	t.Helper()
	cli, p := testParser(t)
	_, err := p.Parse(append([]string{"bench"}, args...))
	return &cli.Bench, err
}

func TestBenchFlagsToConfig(t *testing.T) {
	c, err := parseBench(t, "--target", "http://h:8000/v1", "--model", "m", "--endpoint", "chat",
		"--rate", "4", "--set", "burstiness=0.5", "--set", "max_concurrency=16", "--duration", "2m",
		"--extras.ignore-eos", "--extras.temperature", "0", "--set", "extras.min_tokens=3", "--set", "extras.seed=9", "--set", "extras.enable_thinking=false",
		"--set", "timeouts.first_token=30s", "--engine.start", "kubectl scale --replicas=1 deploy/vllm", "--engine.stop", "kubectl scale --replicas=0 deploy/vllm",
		"--exporter.url", "http://a:9402", "--exporter.url", "http://b:9402",
		"--remote-write.url", "https://mimir/api/v1/push", "--remote-write.http-config-file", httpConfig(t), "--run-id", "r1")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := c.config()
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	if cfg.Endpoint != "chat" || cfg.Rate != 4 || cfg.Burstiness != 0.5 || cfg.MaxConcurrency != 16 || cfg.Duration != 2*time.Minute ||
		cfg.WarmupRequests != 8 || cfg.IdleDuration != 20*time.Second || cfg.Engine.ReadyTimeout != 10*time.Minute {
		t.Errorf("load/lifecycle %+v", cfg)
	}
	x := cfg.Extras
	if x.IgnoreEOS == nil || !*x.IgnoreEOS || *x.MinTokens != 3 || *x.Temperature != 0 || *x.Seed != 9 || x.EnableThinking == nil || *x.EnableThinking || x.MaxTokens != nil {
		t.Errorf("extras %+v", x)
	}
	if cfg.Timeouts.FirstToken != 30*time.Second || cfg.Timeouts.Connect != 10*time.Second || cfg.Engine.Start == "" || len(cfg.Exporters) != 2 {
		t.Errorf("timeouts/engine/exporters %+v", cfg)
	}
	h := cfg.RemoteWrite.HTTP
	if h.BasicAuth == nil || h.BasicAuth.Username != "u" || h.BasicAuth.PasswordFile != "/etc/pw" || h.TLSConfig.CAFile != "/etc/ca.pem" ||
		h.HTTPHeaders == nil || h.HTTPHeaders.Headers["X-Scope-OrgID"].Values[0] != "team-a" {
		t.Errorf("remote write http %+v", h)
	}
}

func TestBenchConfigFileExcludesFlags(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "e.yaml")
	os.WriteFile(f, []byte("target: http://h:1/v1\nconcurrency: 2\nrequests: 5\nengine:\n  no_lifecycle: true\n"), 0o644)
	c, err := parseBench(t, "--config", f, "--concurrency", "4")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Run(context.Background(), &Globals{}); err == nil || !strings.Contains(err.Error(), "drop --concurrency (use --set") {
		t.Errorf("--config with --concurrency: %v", err)
	}
	// Defaults are not flags given: --config alone goes on (here to the dry run).
	c, err = parseBench(t, "--config", f, "--dry-run", "--set", "requests=7")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Run(context.Background(), &Globals{}); err != nil {
		t.Errorf("--config --dry-run: %v", err)
	}
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("target: http://h:1/v1\nconcurrency: 2\nrequests: 5\nworkload:\n  mean_input_tokns: 3\n"), 0o644)
	c, _ = parseBench(t, "--config", bad)
	if err := c.Run(context.Background(), &Globals{}); err == nil || !strings.Contains(err.Error(), "mean_input_tokns") || !strings.Contains(err.Error(), "line 5") {
		t.Errorf("unknown field: %v", err)
	}
	c, _ = parseBench(t, "--target", "http://h:1/v1", "--dry-run")
	if err := c.Run(context.Background(), &Globals{}); err == nil || !strings.Contains(err.Error(), "--dry-run goes with --config") {
		t.Errorf("--dry-run without --config: %v", err)
	}
	c, _ = parseBench(t, "--target", "http://h:1/v1", "--set", "engine.ready_tmeout=1m")
	if err := c.Run(context.Background(), &Globals{}); err == nil || !strings.Contains(err.Error(), "ready_tmeout") {
		t.Errorf("--set of an unknown setting: %v", err)
	}
	c, _ = parseBench(t, "--target", "http://h:1/v1", "--requests", "5")
	if err := c.Run(context.Background(), &Globals{}); err == nil || !strings.Contains(err.Error(), "engine.cmd") {
		t.Errorf("invalid flags: %v", err)
	}
}

// httpConfig is an HTTP client config file with basic auth, a CA and a
// tenant header.
func httpConfig(t *testing.T) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "http.yml")
	content := "basic_auth:\n  username: u\n  password_file: /etc/pw\ntls_config:\n  ca_file: /etc/ca.pem\n" +
		"http_headers:\n  X-Scope-OrgID:\n    values: [team-a]\n"
	if err := os.WriteFile(f, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}
