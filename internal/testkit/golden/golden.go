// Package golden compares test output with golden files in the testdata/
// folder of the package under test; the test flag -update rewrites them.
// A test package that imports it gets -update from here and must not define
// its own.
package golden

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// Update reports whether the test binary runs with -update, for tests that
// write or compare their golden files themselves.
func Update() bool { return *update }

// Compare compares got with the file testdata/name, byte for byte; with
// -update it first writes got there. A difference is reported with t.Errorf,
// both contents shown; a missing file stops the test. It returns whether got
// matched.
func Compare(t testing.TB, name string, got []byte) bool {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatalf("rewriting golden file: %v", err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading golden file (go test -update creates it): %v", err)
	}
	if bytes.Equal(got, want) {
		return true
	}
	t.Errorf("output differs from %s (go test -run '%s' -update rewrites it):\n--- got\n%s\n--- want\n%s", path, t.Name(), got, want)
	return false
}
