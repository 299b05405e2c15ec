package atomicfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// leftovers lists what is in dir besides the names given.
func leftovers(t *testing.T, dir string, want ...string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if !slices.Contains(want, e.Name()) {
			out = append(out, e.Name())
		}
	}
	return out
}

func check(t *testing.T, path, want string) {
	t.Helper()
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Errorf("%s holds %q, want %q", path, got, want)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o644 {
		t.Errorf("%s mode %v, want 0644", path, st.Mode().Perm())
	}
}

func TestWriteFileReplaces(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "a.json")
	for _, data := range []string{"one", "two"} {
		if err := WriteFile(p, []byte(data)); err != nil {
			t.Fatal(err)
		}
		check(t, p, data)
	}
	if l := leftovers(t, dir, "a.json"); len(l) > 0 {
		t.Errorf("left behind %v", l)
	}
}

func TestWriteFileNewRefusesToReplace(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "plan.md")
	if err := WriteFileNew(p, []byte("one")); err != nil {
		t.Fatal(err)
	}
	err := WriteFileNew(p, []byte("two"))
	if !errors.Is(err, fs.ErrExist) || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), "refusing to overwrite") {
		t.Errorf("second write: %v, want a refusal naming %s", err, p)
	}
	check(t, p, "one")
	if l := leftovers(t, dir, "plan.md"); len(l) > 0 {
		t.Errorf("left behind %v", l)
	}
}

func TestWriteErrorsNameThePath(t *testing.T) {
	p := filepath.Join(t.TempDir(), "missing", "a.json")
	for name, write := range map[string]func(string, []byte) error{"WriteFile": WriteFile, "WriteFileNew": WriteFileNew} {
		if err := write(p, []byte("x")); err == nil || !strings.Contains(err.Error(), p) {
			t.Errorf("%s into a missing folder: %v, want an error naming %s", name, err, p)
		}
	}
}
