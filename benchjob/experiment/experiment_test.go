package experiment

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/joulemark/joulemark/internal/testkit/golden"
)

// testConfig stands for a command's config type (benchjob.Config).
type testConfig struct {
	RunID   string            `yaml:"run_id"`
	Model   string            `yaml:"model"`
	Load    testLoad          `yaml:"load"`
	Tags    map[string]string `yaml:"tags"`
	Args    []string          `yaml:"args"`
	Timeout time.Duration     `yaml:"timeout"`
}

type testLoad struct {
	Concurrency  int     `yaml:"concurrency"`
	Rate         float64 `yaml:"rate"`
	OutputTokens int     `yaml:"output_tokens"`
}

func (c *testConfig) Validate() error {
	var errs []error
	if c.Model == "" {
		errs = append(errs, errors.New("model: required"))
	}
	if c.Load.Concurrency > 0 && c.Load.Rate > 0 {
		errs = append(errs, errors.New("load: concurrency and rate exclude each other"))
	}
	if c.Load.Concurrency < 0 {
		errs = append(errs, errors.New("load.concurrency: must not be negative"))
	}
	return errors.Join(errs...)
}

func defaults() testConfig {
	return testConfig{Load: testLoad{Concurrency: 4, OutputTokens: 100}, Timeout: time.Minute}
}

func opts(sets ...string) Options[testConfig] {
	return Options[testConfig]{
		Defaults: defaults,
		SetName:  func(c *testConfig, n string) { c.RunID = n },
		Sets:     sets,
	}
}

func expand(t *testing.T, doc string, o Options[testConfig]) ([]Run[testConfig], error) {
	t.Helper()
	return Expand[testConfig](strings.NewReader(doc), o)
}

func names(runs []Run[testConfig]) []string {
	var n []string
	for _, r := range runs {
		n = append(n, r.Name)
	}
	return n
}

func TestExpand(t *testing.T) {
	tests := []struct {
		name  string
		doc   string
		sets  []string
		names []string
		check func(t *testing.T, runs []Run[testConfig])
	}{
		{
			name:  "plain config gets defaults",
			doc:   "model: m\nload:\n  output_tokens: 7\n",
			names: []string{""},
			check: func(t *testing.T, runs []Run[testConfig]) {
				want := testConfig{Model: "m", Load: testLoad{Concurrency: 4, OutputTokens: 7}, Timeout: time.Minute}
				if !reflect.DeepEqual(runs[0].Config, want) {
					t.Errorf("config = %+v, want %+v", runs[0].Config, want)
				}
			},
		},
		{
			name:  "single base with name",
			doc:   "name: one\nbase:\n  model: m\n",
			names: []string{"one"},
			check: func(t *testing.T, runs []Run[testConfig]) {
				if runs[0].Config.RunID != "one" {
					t.Errorf("SetName not applied: run_id %q", runs[0].Config.RunID)
				}
			},
		},
		{
			name: "matrix merges nested keys and does not leak between runs",
			doc: `name: exp
base:
  model: m
  load: {concurrency: 2, output_tokens: 50}
  args: [a, b]
runs:
  - name: x
    load: {output_tokens: 900}
    args: [c]
  - name: y
`,
			names: []string{"exp-x", "exp-y"},
			check: func(t *testing.T, runs []Run[testConfig]) {
				x, y := runs[0].Config, runs[1].Config
				if x.Load != (testLoad{Concurrency: 2, OutputTokens: 900}) {
					t.Errorf("x load = %+v", x.Load)
				}
				if !reflect.DeepEqual(x.Args, []string{"c"}) {
					t.Errorf("x args = %v, want a list replaced whole", x.Args)
				}
				if y.Load != (testLoad{Concurrency: 2, OutputTokens: 50}) || !reflect.DeepEqual(y.Args, []string{"a", "b"}) {
					t.Errorf("y = %+v: x's overrides leaked into it", y)
				}
			},
		},
		{
			name: "sweep is a cartesian product, first axis outermost",
			doc: `name: s
base: {model: m}
sweep:
  load.concurrency: [1, 8]
  model: [a/b, c]
`,
			names: []string{"s-concurrency-1-model-a_b", "s-concurrency-1-model-c", "s-concurrency-8-model-a_b", "s-concurrency-8-model-c"},
			check: func(t *testing.T, runs []Run[testConfig]) {
				if got := runs[2].Config; got.Load.Concurrency != 8 || got.Model != "a/b" || got.Load.OutputTokens != 100 {
					t.Errorf("run 3 = %+v", got)
				}
				if want := []string{"load.concurrency=8", "model=a_b"}; !reflect.DeepEqual(runs[2].Origin, want) {
					t.Errorf("origin = %v, want %v", runs[2].Origin, want)
				}
			},
		},
		{
			name: "matrix crossed with sweep; colliding leaves use the full path; lists get indexes",
			doc: `name: e
base: {model: m}
runs:
  - name: r1
  - name: r2
sweep:
  load.rate: [0.5]
  tags.rate: ["x"]
  args: [[p], [q]]
`,
			names: []string{
				"e-r1-load.rate-0.5-tags.rate-x-args-1", "e-r1-load.rate-0.5-tags.rate-x-args-2",
				"e-r2-load.rate-0.5-tags.rate-x-args-1", "e-r2-load.rate-0.5-tags.rate-x-args-2",
			},
			sets: []string{"load.concurrency=0"},
			check: func(t *testing.T, runs []Run[testConfig]) {
				if got := runs[1].Config; !reflect.DeepEqual(got.Args, []string{"q"}) || got.Tags["rate"] != "x" || got.Load.Rate != 0.5 {
					t.Errorf("run 2 = %+v", got)
				}
			},
		},
		{
			name:  "--set overrides the file and the sweep",
			doc:   "name: s\nbase: {model: m}\nsweep:\n  load.output_tokens: [1, 2]\n",
			sets:  []string{"load.output_tokens=77", "timeout=5s", "tags.k=v w"},
			names: []string{"s-output_tokens-1", "s-output_tokens-2"},
			check: func(t *testing.T, runs []Run[testConfig]) {
				for _, r := range runs {
					if r.Config.Load.OutputTokens != 77 || r.Config.Timeout != 5*time.Second || r.Config.Tags["k"] != "v w" {
						t.Errorf("%s = %+v", r.Name, r.Config)
					}
				}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			runs, err := expand(t, tc.doc, opts(tc.sets...))
			if err != nil {
				t.Fatal(err)
			}
			if got := names(runs); !reflect.DeepEqual(got, tc.names) {
				t.Fatalf("names = %q, want %q", got, tc.names)
			}
			if tc.check != nil {
				tc.check(t, runs)
			}
		})
	}
}

func TestExpandErrors(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		sets []string
		want []string // substrings of the error
	}{
		{"unknown key in plain config", "model: m\nload:\n  concurency: 3\n", nil, []string{"line 3", "concurency"}},
		{"unknown key in base", "name: e\nbase:\n  model: m\n  bogus: 1\n", nil, []string{"line 4", "bogus"}},
		{"unknown key in a run", "name: e\nbase: {model: m}\nruns:\n  - name: a\n  - name: b\n    lod: {}\n", nil, []string{"line 6", "lod"}},
		{"unknown top-level key", "name: e\nbase: {model: m}\nsweeps: {}\n", nil, []string{"line 3", "sweeps"}},
		{"wrong type", "name: e\nbase:\n  model: m\n  load: {concurrency: many}\n", nil, []string{"line 4", "many"}},
		{"duplicate key", "model: m\nmodel: n\n", nil, []string{"line 2", "model"}},
		{"unknown sweep key", "name: e\nbase: {model: m}\nsweep:\n  load.concurency: [1]\n", nil, []string{"line 4", "load.concurency", "concurrency, rate, output_tokens"}},
		{"sweep into a scalar", "name: e\nbase: {model: m}\nsweep:\n  model.x: [1]\n", nil, []string{"line 4", "model is a string"}},
		{"sweep value of the wrong type", "name: e\nbase: {model: m}\nsweep:\n  load.concurrency: [1,\n    x]\n", nil, []string{"line 5", "x"}},
		{"sweep axis not a list", "name: e\nbase: {model: m}\nsweep:\n  load.concurrency: 3\n", nil, []string{"line 4", "non-empty list"}},
		{"sweep without a name", "base: {model: m}\nsweep:\n  load.concurrency: [1]\n", nil, []string{"name: required"}},
		{"run without a name", "name: e\nbase: {model: m}\nruns:\n  - model: x\n", nil, []string{"line 4", "runs[0]: name: required"}},
		{"bad run name", "name: e\nruns:\n  - name: a b\n    model: m\n", nil, []string{"line 3", `"a b"`}},
		{"name collision in sweep", "name: e\nbase: {model: m}\nsweep:\n  model: [a/b, a_b]\n", nil, []string{`"e-model-a_b" is produced twice`, "[model=a_b] and by [model=a_b]"}},
		{"name collision in matrix", "name: e\nbase: {model: m}\nruns:\n  - name: a\n  - name: a\n", nil, []string{`"e-a" is produced twice`, "[runs[0] a] and by [runs[1] a]"}},
		{"validation names the run", "name: e\nruns:\n  - name: ok\n    model: m\n  - name: bad\n", nil, []string{`run "e-bad"`, "model: required"}},
		{"validation sees every run", "name: e\nruns:\n  - name: a\n  - name: b\n", nil, []string{`run "e-a"`, `run "e-b"`}},
		{"set unknown key", "model: m\n", []string{"load.concurency=1"}, []string{"--set", "load.concurency", "known at load"}},
		{"set wrong type", "model: m\n", []string{"load.concurrency=lots"}, []string{"--set", "lots"}},
		{"set without =", "model: m\n", []string{"load.concurrency"}, []string{"section.field=value"}},
		{"set makes it invalid", "model: m\n", []string{"load.rate=2"}, []string{"exclude each other", "--set load.rate=2"}},
		{"empty file", "", nil, []string{"empty"}},
		{"two documents", "model: m\n---\nmodel: n\n", nil, []string{"line 2", "one YAML document"}},
		{"not a mapping", "- model: m\n", nil, []string{"line 1", "mapping"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			runs, err := expand(t, tc.doc, opts(tc.sets...))
			if err == nil {
				t.Fatalf("no error; runs %q", names(runs))
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestDryRunGolden(t *testing.T) {
	runs, err := LoadFile[testConfig](filepath.Join("testdata", "sweep.yaml"), opts("load.rate=0"))
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 12 {
		t.Fatalf("%d runs, want 2 × 3 × 2 = 12", len(runs))
	}
	var buf bytes.Buffer
	if err := WriteDryRun(&buf, runs, false); err != nil {
		t.Fatal(err)
	}
	if err := WriteDryRun(&buf, runs[len(runs)-1:], true); err != nil {
		t.Fatal(err)
	}
	golden.Compare(t, "sweep.dryrun.golden", buf.Bytes())
}

func TestLoadFileNamesTheFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "exp.yaml")
	if err := os.WriteFile(p, []byte("model: m\nbogus: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := LoadFile[testConfig](p, opts())
	if err == nil || !strings.Contains(err.Error(), p+": ") || !strings.Contains(err.Error(), "line 2") {
		t.Fatalf("error %v should name %s and line 2", err, p)
	}
}

// TestExpandSizeCapped: an experiment of more than MaxRuns runs is refused
// before it is expanded, the error naming its size and the cap (issue 33
// medium 7: a 100×100×100 sweep --dry-run took 390 s and 10 GB).
func TestExpandSizeCapped(t *testing.T) {
	list := func(n int, f string) string {
		var v []string
		for i := 1; i <= n; i++ {
			v = append(v, fmt.Sprintf(f, i))
		}
		return "[" + strings.Join(v, ", ") + "]"
	}
	doc := "name: e\nbase: {model: m}\nsweep:\n  load.concurrency: " + list(30, "%d") +
		"\n  load.output_tokens: " + list(30, "%d") + "\n  timeout: " + list(30, "%ds") + "\n"
	runs, err := expand(t, doc, opts())
	if err == nil || !strings.Contains(err.Error(), "27000 runs") || !strings.Contains(err.Error(), "10000") {
		t.Fatalf("%d runs, error %v; want the size (27000) and the cap (10000) named", len(runs), err)
	}
	doc = "name: e\nbase: {model: m}\nsweep:\n  load.concurrency: " + list(100, "%d") + "\n  load.output_tokens: " + list(100, "%d") + "\n"
	if runs, err := expand(t, doc, opts()); err != nil || len(runs) != MaxRuns {
		t.Errorf("a sweep of exactly MaxRuns: %d runs, %v", len(runs), err)
	}
}
