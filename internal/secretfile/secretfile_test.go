package secretfile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRead(t *testing.T) {
	dir := t.TempDir()
	good, blank := filepath.Join(dir, "good"), filepath.Join(dir, "blank")
	if err := os.WriteFile(good, []byte("  s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(blank, []byte(" \n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if s, err := Read(good, "token_file"); err != nil || s != "s3cret" {
		t.Errorf("Read(good) = %q, %v; want the trimmed secret", s, err)
	}
	if _, err := Read(blank, "token_file"); err == nil || !strings.Contains(err.Error(), "token_file: "+blank+" is empty") {
		t.Errorf("Read(blank) = %v, want an empty-secret error naming field and file", err)
	}
	if _, err := Read(filepath.Join(dir, "missing"), "token_file"); err == nil || !strings.HasPrefix(err.Error(), "token_file: ") {
		t.Errorf("Read(missing) = %v, want an error naming the field", err)
	}
}

func TestRedactURL(t *testing.T) {
	for raw, want := range map[string]string{
		"http://user:hunter2@gpu-node:9402":     "http://user:xxxxx@gpu-node:9402",
		"http://user@gpu-node:9402/path":        "http://user@gpu-node:9402/path",
		"https://gpu-node:9402":                 "https://gpu-node:9402",
		"http://user:hunter2@gpu node:9402/%zz": "xxxxx@gpu node:9402/%zz",
	} {
		if got := RedactURL(raw); got != want {
			t.Errorf("RedactURL(%q) = %q, want %q", raw, got, want)
		}
	}
}

func TestExposed(t *testing.T) {
	dir := t.TempDir()
	for mode, want := range map[os.FileMode]bool{0o600: false, 0o640: false, 0o644: true, 0o604: true} {
		p := filepath.Join(dir, mode.String())
		if err := os.WriteFile(p, []byte("s"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		if got, _ := Exposed(p); got != want {
			t.Errorf("Exposed(mode %v) = %v, want %v", mode, got, want)
		}
	}
	if got, _ := Exposed(filepath.Join(dir, "missing")); got {
		t.Error("a missing file is exposed")
	}
}
