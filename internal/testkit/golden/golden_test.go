package golden

import (
	"fmt"
	"strings"
	"testing"
)

// recorder is a testing.TB that records what Compare reports.
type recorder struct {
	testing.TB
	errors, fatals []string
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}

// Fatalf records and ends the calling goroutine, as testing's does.
func (r *recorder) Fatalf(format string, args ...any) {
	r.fatals = append(r.fatals, fmt.Sprintf(format, args...))
	panic(r)
}

func compare(t *testing.T, name string, got []byte) (r *recorder, ok bool) {
	r = &recorder{TB: t}
	defer func() {
		if p := recover(); p != nil && p != r {
			panic(p)
		}
	}()
	return r, Compare(r, name, got)
}

func TestCompare(t *testing.T) {
	if Update() {
		t.Skip("-update would rewrite this package's own fixture")
	}
	r, ok := compare(t, "hello.golden", []byte("hello\n"))
	if !ok || len(r.errors)+len(r.fatals) != 0 {
		t.Errorf("same content: ok %v, errors %q, fatals %q", ok, r.errors, r.fatals)
	}
	r, ok = compare(t, "hello.golden", []byte("hello"))
	if ok || len(r.errors) != 1 || !strings.Contains(r.errors[0], "testdata/hello.golden") || !strings.Contains(r.errors[0], "-update") {
		t.Errorf("different content: ok %v, errors %q", ok, r.errors)
	}
	r, ok = compare(t, "missing.golden", []byte("x"))
	if ok || len(r.fatals) != 1 || !strings.Contains(r.fatals[0], "missing.golden") {
		t.Errorf("missing file: ok %v, fatals %q", ok, r.fatals)
	}
}
