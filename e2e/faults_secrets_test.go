package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestFaultSecretsRedacted: `joulemark phase` with a
// password in --exporter.url never prints it, on stdout (success) or in
// its errors (exporter down); a token file every user can read is
// accepted with a warning naming the flag and the file.
func TestFaultSecretsRedacted(t *testing.T) {
	f := newFaultDirs(t)
	f.start(t)
	const password = "hunter2-s3cret"
	withUser := strings.Replace(f.expURL, "http://", "http://operator:"+password+"@", 1)
	shared := filepath.Join(f.dir, "shared-token")
	if err := os.WriteFile(shared, []byte(f.token+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(shared, 0o644); err != nil {
		t.Fatal(err)
	}
	ok := runJoulemark(t, 30*time.Second, f.bin, "phase", "sr-1", "idle", "--exporter.url="+withUser, "--exporter.bearer-token-file="+shared)
	if ok.code != 0 || !strings.Contains(ok.stdout, "operator:xxxxx@") {
		t.Errorf("phase: exit %d, stdout %q: want 0 and the URL with its password redacted\n%s", ok.code, ok.stdout, ok.stderr)
	}
	if !strings.Contains(ok.stderr, "readable by every user") || !strings.Contains(ok.stderr, shared) {
		t.Errorf("world-readable token file: no warning naming it:\n%s", ok.stderr)
	}
	down := strings.Replace(freePortURL(t), "http://", "http://operator:"+password+"@", 1)
	bad := runJoulemark(t, 30*time.Second, f.bin, "phase", "sr-2", "idle", "--exporter.url="+down, "--exporter.bearer-token-file="+f.tokenFile)
	if bad.code == 0 || !strings.Contains(bad.stderr, "operator:xxxxx@") {
		t.Errorf("phase against a closed port: exit %d, want an error naming the redacted URL:\n%s", bad.code, bad.stderr)
	}
	for _, r := range []result{ok, bad} {
		if strings.Contains(r.stdout+r.stderr, password) {
			t.Errorf("the password reached the output:\n%s\n%s", r.stdout, r.stderr)
		}
	}
}
