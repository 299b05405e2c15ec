package analyze

import (
	"flag"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestDocScaleCommands: the measurement commands of docs/analyze.md's
// "Scale (measured)" name what exists: each -test.bench pattern's first
// part matches a benchmark of this package, each -bench-* flag is one of
// its flags, each JOULEMARK_ANALYZE_CHILD_* variable one the analyze child
// reads, and each `go run ./…` program builds.
func TestDocScaleCommands(t *testing.T) {
	doc, err := os.ReadFile("../docs/analyze.md")
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(doc), "\n## Scale (measured)\n")
	if !ok {
		t.Fatal(`docs/analyze.md has no "## Scale (measured)"`)
	}
	sec, _, _ = strings.Cut(sec, "\n## ")

	benches := benchmarkNames(t)
	pats := regexp.MustCompile(`-test\.bench '?([^' ]+)'?`).FindAllStringSubmatch(sec, -1)
	if len(pats) == 0 {
		t.Fatal("no -test.bench command in the section")
	}
	for _, m := range pats {
		top, _, _ := strings.Cut(m[1], "/")
		re, err := regexp.Compile(top)
		if err != nil {
			t.Errorf("-test.bench %q: %v", m[1], err)
			continue
		}
		if !slices.ContainsFunc(benches, re.MatchString) {
			t.Errorf("-test.bench %q matches no benchmark of package analyze", m[1])
		}
	}
	for _, name := range regexp.MustCompile(`-bench-[a-z-]+`).FindAllString(sec, -1) {
		if flag.Lookup(strings.TrimPrefix(name, "-")) == nil {
			t.Errorf("%s is no flag of the analyze tests", name)
		}
	}
	known := []string{envChildProfile, envChildMemProfile, envChildHeapProfile, envChildHugePages}
	for _, name := range regexp.MustCompile(`JOULEMARK_ANALYZE_CHILD_[A-Z_]+`).FindAllString(sec, -1) {
		if !slices.Contains(known, name) {
			t.Errorf("%s is no variable the analyze child reads (%v)", name, known)
		}
	}
	for _, m := range regexp.MustCompile("`go run (\\./[^` ]+)`").FindAllStringSubmatch(sec, -1) {
		out, err := exec.Command("go", "build", "-o", os.DevNull, filepath.Join("..", m[1])).CombinedOutput()
		if err != nil {
			t.Errorf("go run %s: does not build: %v\n%s", m[1], err, out)
		}
	}
}

// benchmarkNames lists the package's benchmarks, without "Benchmark".
func benchmarkNames(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("*_test.go")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range files {
		af, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range af.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil && strings.HasPrefix(fd.Name.Name, "Benchmark") {
				names = append(names, strings.TrimPrefix(fd.Name.Name, "Benchmark"))
			}
		}
	}
	return names
}
