package contract

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestDesignDocMetrics checks docs/design.md against Metrics both ways: a
// name in one and not the other fails (as Prometheus checks its generated
// command-line docs). A name ending in "_" is a prefix in prose, not a name.
func TestDesignDocMetrics(t *testing.T) {
	b, err := os.ReadFile("../../docs/design.md")
	if err != nil {
		t.Fatal(err)
	}
	inDoc := map[string]bool{}
	for _, m := range regexp.MustCompile(`joulemark_[a-z0-9_]*[a-z0-9]`).FindAllString(string(b), -1) {
		inDoc[m] = true
	}
	for _, m := range Metrics {
		if !inDoc[m] {
			t.Errorf("%s is in the contract but not in docs/design.md", m)
		}
	}
	for m := range inDoc {
		if !slices.Contains(Metrics, m) {
			t.Errorf("docs/design.md names %s, which is not in the contract (internal/contract)", m)
		}
	}
	seen := map[string]bool{}
	for _, m := range Metrics {
		if seen[m] {
			t.Errorf("%s listed twice", m)
		}
		seen[m] = true
	}
}

// TestPhases checks the lifecycle order and ParsePhase.
func TestPhases(t *testing.T) {
	for i, p := range Phases {
		if p.Index() != i {
			t.Errorf("%s index %d, want %d", p, p.Index(), i)
		}
		if q, err := ParsePhase(string(p)); err != nil || q != p {
			t.Errorf("ParsePhase(%s) = %s, %v", p, q, err)
		}
	}
	if _, err := ParsePhase("cooldown"); err == nil {
		t.Error("unknown phase accepted")
	}
}

// TestAnalyzeDocFlags checks docs/analyze.md's Flags table against
// ReportFlags both ways, and that docs/bench.md names every bench flag.
func TestAnalyzeDocFlags(t *testing.T) {
	b, err := os.ReadFile("../../docs/analyze.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, _ := strings.Cut(string(b), "### Flags\n")
	table, _, _ = strings.Cut(table, "\n\n`valid`")
	inDoc := map[string]bool{}
	for _, m := range regexp.MustCompile("(?m)^\\| `([a-z_]+)` \\|").FindAllStringSubmatch(table, -1) {
		inDoc[m[1]] = true
	}
	for _, f := range ReportFlags {
		if !inDoc[f] {
			t.Errorf("report flag %s is not in docs/analyze.md's Flags table", f)
		}
	}
	for f := range inDoc {
		if !slices.Contains(ReportFlags, f) {
			t.Errorf("docs/analyze.md's Flags table lists %s, which is no report flag (internal/contract)", f)
		}
	}
	bench, err := os.ReadFile("../../docs/bench.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range BenchFlags {
		if !strings.Contains(string(bench), "`"+f+"`") {
			t.Errorf("bench flag %s is not in docs/bench.md", f)
		}
	}
}

// TestBenchDocErrorClasses checks docs/bench.md's error class table
// against ErrorClasses both ways.
func TestBenchDocErrorClasses(t *testing.T) {
	b, err := os.ReadFile("../../docs/bench.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(b), "| class | when |\n")
	if !ok {
		t.Fatal("docs/bench.md has no error class table (| class | when |)")
	}
	table, _, _ = strings.Cut(table, "\n\n")
	inDoc := map[ErrorClass]bool{}
	for _, row := range strings.Split(table, "\n") {
		first, _, _ := strings.Cut(strings.TrimPrefix(row, "| "), " |")
		for _, m := range regexp.MustCompile("`([a-z_]+)`").FindAllStringSubmatch(first, -1) {
			inDoc[ErrorClass(m[1])] = true
		}
	}
	for _, c := range ErrorClasses {
		if !inDoc[c] {
			t.Errorf("error class %s is not in docs/bench.md's table", c)
		}
	}
	for c := range inDoc {
		if !slices.Contains(ErrorClasses, c) {
			t.Errorf("docs/bench.md's error class table lists %s, which is no error class (internal/contract)", c)
		}
	}
}

// TestExporterDocEndReasons checks docs/exporter.md's sentence on end
// reasons against EndReasons both ways.
func TestExporterDocEndReasons(t *testing.T) {
	b, err := os.ReadFile("../../docs/exporter.md")
	if err != nil {
		t.Fatal(err)
	}
	_, sentence, ok := strings.Cut(string(b), "Every run ends with an `end_reason`:")
	if !ok {
		t.Fatal("docs/exporter.md no longer says \"Every run ends with an `end_reason`:\"")
	}
	sentence, _, _ = strings.Cut(sentence, ".\n")
	var inDoc []string
	for _, m := range regexp.MustCompile("`([a-z_]+)`(?: \\(| ,|,| or|$)").FindAllStringSubmatch(sentence, -1) {
		inDoc = append(inDoc, m[1])
	}
	slices.Sort(inDoc)
	want := slices.Sorted(slices.Values(EndReasons))
	if !slices.Equal(inDoc, want) {
		t.Errorf("docs/exporter.md names end reasons %v, internal/contract %v", inDoc, want)
	}
}
