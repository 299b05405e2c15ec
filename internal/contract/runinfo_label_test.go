package contract

import "testing"

func TestEngineLabelAndHardware(t *testing.T) {
	for _, tc := range []struct {
		i               RunIdentity
		engine, hardwre string
	}{
		{RunIdentity{Engine: "vllm", EngineVersion: "0.6.3", GPUs: 2, GPUName: "NVIDIA H200"}, "vllm 0.6.3", "2 × NVIDIA H200"},
		{RunIdentity{Engine: "joulemark", EngineVersion: "joulemark-sim-engine joulemark devel", GPUs: 1, GPUName: "Simulated GPU"}, "joulemark-sim-engine joulemark devel", "1 × Simulated GPU"},
		{RunIdentity{Engine: "sglang"}, "sglang", "-"},
		{RunIdentity{}, "-", "-"},
	} {
		if got := tc.i.EngineLabel(); got != tc.engine {
			t.Errorf("%+v: engine %q, want %q", tc.i, got, tc.engine)
		}
		if got := tc.i.Hardware(); got != tc.hardwre {
			t.Errorf("%+v: hardware %q, want %q", tc.i, got, tc.hardwre)
		}
	}
}
