// Package testenv finds the external programs some tests need (Debian's
// prometheus and promtool, chromium). Locally a missing program skips the
// test; in CI (CI=true) it fails it, so CI can never pass by skipping.
package testenv

import (
	"os"
	"os/exec"
	"testing"
)

// InCI reports whether the tests run in CI.
func InCI() bool { return os.Getenv("CI") == "true" }

// LookPath returns the path of program name, or skips (locally) / fails (CI)
// the test when it is not installed.
func LookPath(t testing.TB, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		if InCI() {
			t.Fatalf("%s is required in CI but not found: %v (.ci/run installs it)", name, err)
		}
		t.Skipf("%s not installed (apt-get install prometheus / chromium); CI runs this test", name)
	}
	return p
}

// SkipIfShort skips a slow test under `go test -short` on a developer's
// machine. In CI (CI=true) it never skips: a -short there fails the test,
// so CI cannot pass by leaving the slow tests out.
func SkipIfShort(t testing.TB, why string) {
	t.Helper()
	if !testing.Short() {
		return
	}
	if InCI() {
		t.Fatalf("-short in CI would skip this test (%s); CI runs every test", why)
	}
	t.Skip(why)
}
