package experiment_test

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/joulemark/joulemark/benchjob"
	"github.com/joulemark/joulemark/benchjob/experiment"
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
