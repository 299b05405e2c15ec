package experiment_test

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/joulemark/joulemark/benchjob"
	"github.com/joulemark/joulemark/benchjob/experiment"
	"github.com/joulemark/joulemark/internal/testkit/testenv"
)

func benchOptions(sets ...string) experiment.Options[benchjob.Config] {
	return experiment.BenchOptions(sets)
}

func TestBenchConfig(t *testing.T) {
	runs, err := experiment.LoadBench(filepath.Join("testdata", "bench.yaml"), []string{"workload.seed=7"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"qwen7b-vllm-concurrency-4", "qwen7b-vllm-concurrency-16", "qwen7b-vllm-concurrency-64",
		"qwen7b-sglang-concurrency-4", "qwen7b-sglang-concurrency-16", "qwen7b-sglang-concurrency-64",
	}
	if len(runs) != len(want) {
		t.Fatalf("%d runs, want %d", len(runs), len(want))
	}
	for i, r := range runs {
		c := r.Config
		if r.Name != want[i] || c.RunID != want[i] {
			t.Errorf("run %d: name %q run_id %q, want %q", i, r.Name, c.RunID, want[i])
		}
		// File values, benchjob defaults and --set all reach the config.
		if c.Engine.ReadyTimeout != 15*time.Minute || c.Engine.StopGrace != 30*time.Second || c.Workload.Seed != 7 ||
			c.Workload.StddevInputTokens != 150 || c.Endpoint != "completions" {
			t.Errorf("run %s: defaults/base/--set not all applied: %+v", r.Name, c)
		}
	}
	if !strings.HasPrefix(runs[4].Config.Engine.Cmd, "python -m sglang") || runs[4].Config.Concurrency != 16 {
		t.Errorf("run 5 = %+v", runs[4].Config)
	}
}

func TestBenchConfigErrors(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		sets []string
		want []string
	}{
		{"unknown key", "target: http://h:1/v1\nconcurrency: 1\nrequests: 5\nworkload:\n  mean_output_token: 3\n", nil, []string{"line 5", "mean_output_token"}},
		{"benchjob validation", "target: http://h:1/v1\nrequests: 5\nconcurrency: 2\nrate: 1\n", nil, []string{"exclude each other"}},
		{"set run_id of several runs", "name: x\nbase: {target: 'http://h:1/v1', requests: 5}\nsweep:\n  concurrency: [1, 2]\n", []string{"run_id=again1"}, []string{"--set run_id", "2 runs"}},
		{"run id from the name is validated", "name: x\nbase: {target: 'http://h:1/v1', requests: 5}\nsweep:\n  concurrency: [1, 2]\n", []string{"concurrency=-1"}, []string{"must not be negative"}},
		{"set unknown section", "target: http://h:1/v1\nconcurrency: 1\nrequests: 5\n", []string{"engine.cmdd=x"}, []string{"engine.cmdd", "ready_timeout"}},
		{"set duration", "target: http://h:1/v1\nconcurrency: 1\nrequests: 5\n", []string{"duration=ten"}, []string{"--set", "ten"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := experiment.Expand[benchjob.Config](strings.NewReader(tc.doc), benchOptions(tc.sets...))
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

// TestSetRunID: --set run_id names a single run (it used to be overwritten
// by the run name without a word).
func TestSetRunID(t *testing.T) {
	doc := "name: x\nbase: {target: 'http://h:1/v1', requests: 5, concurrency: 1}\n"
	runs, err := experiment.Expand[benchjob.Config](strings.NewReader(doc), benchOptions("run_id=again1"))
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 1 || runs[0].Config.RunID != "again1" {
		t.Errorf("run id %q, want again1", runs[0].Config.RunID)
	}
}

// TestDocExamples loads every experiment or bench config example of the
// docs (a ```yaml block whose top level has base, runs, sweep or target)
// as `bench --config` would; where the text after it says "gives six
// runs, in this order: `a`, `b`, …", there are that many and the first
// are those.
func TestDocExamples(t *testing.T) {
	namesRe := regexp.MustCompile("(?s)^\\s*gives (\\w+) runs, in this order: (.*?)(?:\\.\\.\\.|\\.\\s*\n)")
	numbers := map[string]int{"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9}
	for _, b := range testenv.DocYAMLBlocks(t, filepath.Join("..", ".."), regexp.MustCompile(`(?m)^(base|runs|sweep|target):`)) {
		path := filepath.Join(t.TempDir(), "example.yaml")
		if err := os.WriteFile(path, []byte(b.YAML), 0o600); err != nil {
			t.Fatal(err)
		}
		runs, err := experiment.LoadBench(path, nil)
		if err != nil {
			t.Errorf("%s: the example does not load: %v\n%s", b.File, err, b.YAML)
			continue
		}
		nm := namesRe.FindStringSubmatch(b.After)
		if nm == nil {
			continue
		}
		var want, got []string
		for _, n := range regexp.MustCompile("`([^`]+)`").FindAllStringSubmatch(nm[2], -1) {
			want = append(want, n[1])
		}
		for _, r := range runs {
			got = append(got, r.Name)
		}
		if len(got) != numbers[nm[1]] || len(want) == 0 || !slices.Equal(got[:min(len(want), len(got))], want) {
			t.Errorf("%s: the example gives runs %v, the text says %s runs beginning %v", b.File, got, nm[1], want)
		}
	}
}

// repeat: N, top level or in a run, reaches each run's config (benchjob
// expands it into N runs when it runs them); a wrong one names its line.
func TestExperimentRepeat(t *testing.T) {
	doc := `name: rep
repeat: 3
base:
  target: http://127.0.0.1:8000/v1
  requests: 400
runs:
  - name: a
  - name: b
    repeat: 5
`
	runs, err := experiment.Expand[benchjob.Config](strings.NewReader(doc), benchOptions())
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 2 || runs[0].Config.Repeat != 3 || runs[1].Config.Repeat != 5 {
		t.Fatalf("repeats %+v, want a: 3, b: 5 (an entry overrides the top level)", runs)
	}
	runs, err = experiment.Expand[benchjob.Config](strings.NewReader("target: http://127.0.0.1:8000/v1\nrepeat: 2\n"), benchOptions("repeat=4"))
	if err != nil || len(runs) != 1 || runs[0].Config.Repeat != 4 {
		t.Fatalf("plain config with --set repeat=4: %+v, %v", runs, err)
	}
	for _, tc := range []struct{ doc, want string }{
		{"name: x\nrepeat: [1]\nbase: {target: http://h/v1}\n", "line 2: repeat: want a number"},
		{"name: x\nrepeat: two\nbase: {target: http://h/v1}\n", "line 2"},
		{"name: x\nrepeat: -1\nbase: {target: http://h/v1}\n", "repeat: -1: want 0 to 100"},
	} {
		_, err := experiment.Expand[benchjob.Config](strings.NewReader(tc.doc), benchOptions())
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want %q", tc.doc, err, tc.want)
		}
	}
}

// A key renamed to a section's path is refused with the new path named
// (no alias: the old key still fails), in the file and in --set.
func TestRenamedKeySuggested(t *testing.T) {
	for _, tc := range []struct {
		yaml, set, want string
	}{
		{yaml: "engine_pod: ns/p\n", want: "line 4: field engine_pod not found in type benchjob.Config (did you mean engine.pod?)"},
		{yaml: "exporter_gpus: [GPU-1]\n", want: "field exporter_gpus not found in type benchjob.Config (did you mean gpus?)"},
		{yaml: "engine:\n  metrics_urll: x\n", want: "field metrics_urll not found in type benchjob.EngineConfig"},
		{set: "engine_metrics_interval=1s", want: "did you mean engine.metrics_interval?"},
	} {
		var sets []string
		if tc.set != "" {
			sets = []string{tc.set}
		}
		_, err := experiment.Expand[benchjob.Config](strings.NewReader("target: http://h:1/v1\nconcurrency: 2\nrequests: 5\n"+tc.yaml), experiment.BenchOptions(sets))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q %q: %v, want %q", tc.yaml, tc.set, err, tc.want)
		}
		if strings.Contains(tc.yaml, "urll") && strings.Contains(err.Error(), "did you mean") {
			t.Errorf("%q: a suggestion for a typo no rule fits: %v", tc.yaml, err)
		}
	}
}

// --dry-run lists the run ids a sweep's points and repetitions run under.
func TestDryRunListsPointsAndRepetitions(t *testing.T) {
	runs, err := experiment.Expand[benchjob.Config](strings.NewReader("target: http://127.0.0.1:8000/v1\nrun_id: grp\nrepeat: 2\nsweep_concurrency: [4, 8]\n"), benchOptions())
	if err != nil {
		t.Fatal(err)
	}
	var buf strings.Builder
	if err := experiment.WriteDryRun(&buf, runs, false); err != nil {
		t.Fatal(err)
	}
	if want := "4 runs: grp-c4-rep1, grp-c4-rep2, grp-c8-rep1, grp-c8-rep2"; !strings.Contains(buf.String(), want) {
		t.Errorf("dry run:\n%s\nwant a line %q", buf.String(), want)
	}
}
