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
