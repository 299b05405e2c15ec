package contract

import (
	"fmt"
	"os"
	"path/filepath"
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

// TestEngineMetrics checks the engine names: each once, prefixed by its
// engine, of a known type, and every server role named.
func TestEngineMetrics(t *testing.T) {
	seen := map[string]bool{}
	for _, m := range EngineMetrics {
		if seen[m.Name] {
			t.Errorf("%s listed twice", m.Name)
		}
		seen[m.Name] = true
		if !strings.HasPrefix(m.Name, m.Engine+":") || !slices.Contains(Engines, m.Engine) {
			t.Errorf("%s: engine %q", m.Name, m.Engine)
		}
		if !slices.Contains([]string{"gauge", "counter", "histogram"}, m.Type) {
			t.Errorf("%s: type %q", m.Name, m.Type)
		}
	}
	for _, r := range ServerRoles {
		if len(EngineNames(r)) == 0 {
			t.Errorf("server role %s has no name", r)
		}
	}
	if got := EngineNames(RoleKVCache, EngineVLLM); !slices.Equal(got, []string{"vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"}) {
		t.Errorf("vLLM's KV-cache names %v: V1's first", got)
	}
}

// TestAnalyzeDocEngineMetrics checks docs/analyze.md's table of engine
// names (| role | vLLM | SGLang |) against the server roles' names both
// ways, and that a made-up row or a missing name fails.
func TestAnalyzeDocEngineMetrics(t *testing.T) {
	b, err := os.ReadFile("../../docs/analyze.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	for _, e := range checkEngineTable(doc) {
		t.Error(e)
	}
	const head = "| role | vLLM | SGLang |\n|---|---|---|\n"
	madeUp := strings.Replace(doc, head, head+"| batch | `vllm:num_batches` | `sglang:num_batches` |\n", 1)
	if len(checkEngineTable(madeUp)) == 0 {
		t.Error("a made-up row passes the check")
	}
	missing := strings.Replace(doc, "`sglang:token_usage`", "", 1)
	if len(checkEngineTable(missing)) == 0 {
		t.Error("a table without sglang:token_usage passes the check")
	}
}

// checkEngineTable returns what is wrong with doc's engine name table: a
// name no server role has, a server role's name missing, or a cell not
// holding its engine's names of the row's roles in order of preference (a
// row may hold several roles: SGLang's retraction counter and its gauge).
func checkEngineTable(doc string) []string {
	_, table, ok := strings.Cut(doc, "| role | vLLM | SGLang |\n|---|---|---|\n")
	if !ok {
		return []string{"docs/analyze.md has no table | role | vLLM | SGLang |"}
	}
	table, _, _ = strings.Cut(table, "\n\n")
	var errs []string
	inDoc := map[string]bool{}
	name := regexp.MustCompile("`([a-z]+:[a-z0-9_:]+)`")
	for _, row := range strings.Split(table, "\n") {
		cells := strings.Split(strings.Trim(row, "| "), " | ")
		if len(cells) != 1+len(Engines) {
			errs = append(errs, fmt.Sprintf("docs/analyze.md's row %q: want %d cells", row, 1+len(Engines)))
			continue
		}
		names := make([][]string, len(Engines))
		var roles []EngineRole
		for i := range Engines {
			for _, m := range name.FindAllStringSubmatch(cells[i+1], -1) {
				names[i], inDoc[m[1]] = append(names[i], m[1]), true
				em, ok := LookupEngineMetric(m[1])
				if !ok || !slices.Contains(ServerRoles, em.Role) {
					errs = append(errs, fmt.Sprintf("docs/analyze.md names %s, which is no server role's name in internal/contract", m[1]))
				} else if !slices.Contains(roles, em.Role) {
					roles = append(roles, em.Role)
				}
			}
		}
		for i, engine := range Engines {
			var want []string
			for _, r := range ServerRoles {
				if slices.Contains(roles, r) {
					want = append(want, EngineNames(r, engine)...)
				}
			}
			if !slices.Equal(names[i], want) {
				errs = append(errs, fmt.Sprintf("docs/analyze.md's %s cell of row %q names %v, internal/contract %v", engine, cells[0], names[i], want))
			}
		}
	}
	for _, r := range ServerRoles {
		for _, n := range EngineNames(r) {
			if !inDoc[n] {
				errs = append(errs, fmt.Sprintf("%s (role %s) is in internal/contract but not in docs/analyze.md's engine table", n, r))
			}
		}
	}
	return errs
}

// TestDocsEngineNames: every engine metric name the docs write
// (vllm:..., sglang:...) is one of EngineMetrics, and docs/demo.md, which
// lists what the simulated engine publishes, names all of them.
func TestDocsEngineNames(t *testing.T) {
	files, _ := filepath.Glob("../../docs/*.md")
	files = append(files, "../../README.md")
	engineName := regexp.MustCompile(`\b(?:` + strings.Join(Engines, "|") + `):[a-z0-9_:]*[a-z0-9]`)
	inDemo := map[string]bool{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range engineName.FindAllString(string(b), -1) {
			if _, ok := LookupEngineMetric(n); !ok {
				t.Errorf("%s names %s, which is no engine metric of internal/contract", f, n)
			}
			if filepath.Base(f) == "demo.md" {
				inDemo[n] = true
			}
		}
	}
	for _, m := range EngineMetrics {
		if !inDemo[m.Name] {
			t.Errorf("%s is in internal/contract (the simulated engine publishes it) but not in docs/demo.md", m.Name)
		}
	}
}

// LookupEngineMetric returns the engine metric of that name.
func LookupEngineMetric(name string) (EngineMetric, bool) {
	for _, m := range EngineMetrics {
		if m.Name == name {
			return m, true
		}
	}
	return EngineMetric{}, false
}

// TestBenchDocAggregates checks docs/bench.md's table of the bench's
// aggregates against BenchAggregates both ways: name, type, labels, help.
func TestBenchDocAggregates(t *testing.T) {
	b, err := os.ReadFile("../../docs/bench.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := regexp.MustCompile("(?m)^\\| `(joulemark_bench_[a-z_]+)` \\| ([a-z]+) \\| ([a-z_, ]+) \\| (.+) \\|$").FindAllStringSubmatch(string(b), -1)
	if len(rows) == 0 {
		t.Fatal("docs/bench.md has no table of the bench's aggregates")
	}
	inDoc := map[string]bool{}
	for _, r := range rows {
		inDoc[r[1]] = true
		d, ok := BenchAggregate(r[1])
		if !ok {
			t.Errorf("docs/bench.md's aggregates table lists %s, which is not in BenchAggregates", r[1])
			continue
		}
		if r[2] != d.Type || r[3] != strings.Join(d.Labels, ", ") || r[4] != d.Help {
			t.Errorf("docs/bench.md: %s | %s | %s | %s, the contract says %s | %s | %s", r[1], r[2], r[3], r[4], d.Type, strings.Join(d.Labels, ", "), d.Help)
		}
	}
	for _, d := range BenchAggregates {
		if !inDoc[d.Name] {
			t.Errorf("aggregate %s is not in docs/bench.md's table", d.Name)
		}
	}
}
