package main

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/joulemark/joulemark/benchjob/experiment"
)

// TestBenchTargetHTTP: --target.http-config-file gives the run's
// target_http, the same as target_http in --config; with
// --target.api-key-file and an authorization in the file it is an error
// naming both flags.
func TestBenchTargetHTTP(t *testing.T) {
	dir := t.TempDir()
	key := filepath.Join(dir, "key")
	hc := filepath.Join(dir, "engine-http.yml")
	body := "authorization:\n  credentials_file: " + key + "\ntls_config:\n  server_name: engine.internal\nhttp_headers:\n  X-Scope-OrgID:\n    values: [tenant-a]\n"
	exp := filepath.Join(dir, "e.yaml")
	for f, s := range map[string]string{key: "sk-1\n", hc: body,
		exp: "target: http://h:1/v1\nconcurrency: 2\nrequests: 5\nengine:\n  no_lifecycle: true\ntarget_http:\n  " + strings.ReplaceAll(strings.TrimSpace(body), "\n", "\n  ") + "\n"} {
		if err := os.WriteFile(f, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	c, err := parseBench(t, "--target", "http://h:1/v1", "--concurrency", "2", "--requests", "5", "--engine.no-lifecycle",
		"--target.http-config-file", hc)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := c.config()
	if err != nil {
		t.Fatal(err)
	}
	if a := cfg.TargetHTTP.Authorization; a == nil || a.CredentialsFile != key || cfg.TargetHTTP.TLSConfig.ServerName != "engine.internal" {
		t.Fatalf("target_http from the flag: %+v", cfg.TargetHTTP)
	}
	runs, err := experiment.LoadBench(exp, nil)
	if err != nil || len(runs) != 1 {
		t.Fatalf("%d runs, %v", len(runs), err)
	}
	if fromFile := runs[0].Config; !reflect.DeepEqual(fromFile.TargetHTTP, cfg.TargetHTTP) {
		t.Errorf("--config gives target_http\n%+v\nthe flag gives\n%+v", fromFile.TargetHTTP, cfg.TargetHTTP)
	}

	c, err = parseBench(t, "--target", "http://h:1/v1", "--concurrency", "2", "--requests", "5", "--engine.no-lifecycle",
		"--target.http-config-file", hc, "--target.api-key-file", key)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.config()
	for _, w := range []string{"--target.api-key-file", "authorization", "--target.http-config-file " + hc} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("key file and authorization: error %v, want it to name %q", err, w)
		}
	}
}
