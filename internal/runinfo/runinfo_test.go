package runinfo

import (
	"slices"
	"testing"
)

func TestLabelsRoundTrip(t *testing.T) {
	in := Info{RunID: "r1", Model: "m", Engine: "vllm", EngineVersion: "0.11.0", GPUName: "NVIDIA H200", GPUs: 8,
		Scenario: "s", LoadMode: "poisson", Rate: 2.5, MeanInputTokens: 512, MeanOutputTokens: 150, IgnoreEOS: true,
		DatasetSHA256: "ab", Mode: ModeAttached}
	l := in.Labels()
	for k := range l {
		if !slices.Contains(LabelNames, k) {
			t.Errorf("label %q not in LabelNames", k)
		}
	}
	if out := FromLabels(l); out != in {
		t.Errorf("round trip %+v, want %+v", out, in)
	}
	if _, ok := (Info{RunID: "r"}).Labels()["model"]; ok {
		t.Error("an empty model became a label")
	}
	if got := in.Load(); got != "rate 2.5 req/s (poisson)" {
		t.Errorf("load %q", got)
	}
	if got := (Info{LoadMode: "closed", Concurrency: 12}).Load(); got != "concurrency 12" {
		t.Errorf("load %q", got)
	}
	if got := GPUNames([]string{"H200", "", "H200", "A100"}); got != "H200+A100" {
		t.Errorf("gpu names %q", got)
	}
}
