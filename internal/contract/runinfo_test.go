package contract

import (
	"slices"
	"testing"
)

func TestLabelsRoundTrip(t *testing.T) {
	in := RunIdentity{RunID: "r1", Model: "m", Engine: "vllm", EngineVersion: "0.11.0", GPUName: "NVIDIA H200", GPUs: 8,
		Scenario: "s", LoadMode: "poisson", Rate: 2.5, MeanInputTokens: 512, MeanOutputTokens: 150, IgnoreEOS: true,
		DatasetSHA256: "ab", Mode: ModeAttached, RepetitionGroup: "exp-c8", Repetition: 2, Repetitions: 3}
	l := in.Labels()
	for k := range l {
		if !slices.Contains(RunIdentityLabels, k) {
			t.Errorf("label %q not in RunIdentityLabels", k)
		}
	}
	if out := RunIdentityFromLabels(l); out != in {
		t.Errorf("round trip %+v, want %+v", out, in)
	}
	if _, ok := (RunIdentity{RunID: "r"}).Labels()["model"]; ok {
		t.Error("an empty model became a label")
	}
	if _, ok := (RunIdentity{RunID: "r"}).Labels()["repetition"]; ok {
		t.Error("a run that is no repetition got a repetition label")
	}
	a, b := in, in
	b.RunID, b.Repetition = "r2", 3
	if a.Configuration() != b.Configuration() {
		t.Error("two repetitions of one group differ in configuration")
	}
	b.RepetitionGroup = "exp-c8-2"
	if a.Configuration() == b.Configuration() {
		t.Error("two repetition groups share a configuration")
	}
	if got := in.Load(); got != "rate 2.5 req/s (poisson)" {
		t.Errorf("load %q", got)
	}
	if got := (RunIdentity{LoadMode: "closed", Concurrency: 12}).Load(); got != "concurrency 12" {
		t.Errorf("load %q", got)
	}
	if got := JoinGPUNames([]string{"H200", "", "H200", "A100"}); got != "H200+A100" {
		t.Errorf("gpu names %q", got)
	}
}
