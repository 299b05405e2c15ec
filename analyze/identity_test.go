package analyze

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestArchiveRunInfoFallback(t *testing.T) {
	dir := t.TempDir()
	if info, err := archiveRunInfo(dir); info != nil || err != nil {
		t.Fatalf("no manifest: %+v, %v; want nil, nil", info, err)
	}
	m := `{"run_id":"r1","run_info":{"run_id":"r1","model":"m","engine":"sglang","gpus":8,"gpu_name":"NVIDIA H200","load_mode":"poisson","rate":2.5,"dataset_sha256":"ab"}}`
	if err := os.WriteFile(filepath.Join(dir, "manifest.json"), []byte(m), 0o644); err != nil {
		t.Fatal(err)
	}
	info, err := archiveRunInfo(dir)
	if err != nil || info == nil || info.Model != "m" || info.GPUs != 8 || info.Rate != 2.5 || info.Load() != "rate 2.5 req/s (poisson)" {
		t.Fatalf("run info %+v, %v", info, err)
	}
	line := identityLine(&RunIdentity{Info: *info, Source: "archive"})
	for _, want := range []string{"`m`", "sglang", "8 × NVIDIA H200", "rate 2.5 req/s (poisson)", "from archive"} {
		if !strings.Contains(line, want) {
			t.Errorf("identity line %q lacks %q", line, want)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "manifest.json"), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := archiveRunInfo(dir); err == nil || !strings.Contains(err.Error(), "manifest.json") {
		t.Errorf("broken manifest: %v, want an error naming it", err)
	}
}
