package phaseapi

import (
	"strings"
	"testing"
)

// TestGapEnergy: a gap's description (analyze's exporter_restarted
// message, the bench's log line) says no energy was
// measured over the gap only for the GPUs the exporter did not bridge with
// their own energy counters, and, for a GPU's own gap (missing after the
// restart), only about that GPU.
func TestGapEnergy(t *testing.T) {
	gpus := []GPUInfo{{GPU: 0}, {GPU: 1}}
	for _, tc := range []struct {
		gapGPUs, bridged []int
		want, dont       string
	}{
		{nil, nil, "no energy was measured there", "counted"},
		{nil, []int{0, 1}, "own energy counters gave the downtime's energy (GPU 0, 1)", "no energy"},
		{nil, []int{1}, "GPU 1 came from their own energy counters and is counted, none was measured on GPU 0", "GPU 0,"},
		{[]int{1}, nil, "no energy was measured there", "counted"},
		{[]int{1}, []int{1}, "own energy counters gave the downtime's energy (GPU 1), which the stage energies count", "GPU 0"},
	} {
		got := (Gap{Start: 1, End: 2, EnergyBridgedGPUs: tc.bridged, GPUs: tc.gapGPUs}).energy(gpus)
		if !strings.Contains(got, tc.want) || strings.Contains(got, tc.dont) {
			t.Errorf("gap of GPUs %v, bridged %v: %q, want %q and not %q", tc.gapGPUs, tc.bridged, got, tc.want, tc.dont)
		}
	}
}
