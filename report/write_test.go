package report

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWrite: the three files land at once; a second write into the same
// directory fails with ErrExists and changes nothing; WriteKeeping moves
// the earlier report to dir.1.
func TestWrite(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	first := Files{JSON: []byte("{}\n"), Markdown: []byte("# 1\n"), HTML: []byte("<p>1</p>")}
	if err := Write(dir, first); err != nil {
		t.Fatal(err)
	}
	second := Files{JSON: []byte("{\"a\":1}\n"), Markdown: []byte("# 2\n"), HTML: []byte("<p>2</p>")}
	if err := Write(dir, second); !errors.Is(err, ErrExists) {
		t.Fatalf("second write: %v, want ErrExists", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, FileMarkdown)); string(b) != "# 1\n" {
		t.Errorf("report.md after a refused write = %q", b)
	}
	kept, err := WriteKeeping(dir, second)
	if err != nil || kept != dir+".1" {
		t.Fatalf("WriteKeeping = %q, %v", kept, err)
	}
	for d, want := range map[string]string{dir: "# 2\n", kept: "# 1\n"} {
		if b, _ := os.ReadFile(filepath.Join(d, FileMarkdown)); string(b) != want {
			t.Errorf("%s: report.md = %q, want %q", d, b, want)
		}
	}
	if entries, _ := os.ReadDir(filepath.Dir(dir)); len(entries) != 2 {
		t.Errorf("left over beside the report: %v", entries)
	}
}

// TestLoad: a directory or its report.json reads the same; a bad file
// names its path and line.
func TestLoad(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, FileJSON), []byte("{\"run_id\": \"r1\", \"valid\": true}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{dir, filepath.Join(dir, FileJSON)} {
		if r, err := Load(p); err != nil || r.RunID != "r1" || !r.Valid {
			t.Errorf("Load(%s) = %+v, %v", p, r, err)
		}
	}
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte("{\n\"valid\": 3\n}"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(bad); err == nil || !containsAll(err.Error(), bad, "line 2") {
		t.Errorf("Load(bad) = %v", err)
	}
}

func containsAll(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

// TestWriteRefusesSymlink: an output directory given as a symbolic link
// is refused before anything is written, and the link stays (writing
// would otherwise replace it with a directory).
func TestWriteRefusesSymlink(t *testing.T) {
	base := t.TempDir()
	target := filepath.Join(base, "target")
	if err := os.Mkdir(target, 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(base, "link")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	err := Write(link, Files{JSON: []byte("{}\n")})
	if err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Fatalf("Write through a link: %v, want a refusal naming the link", err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link is gone or replaced: %v, %v", fi, err)
	}
}
