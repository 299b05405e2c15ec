package exporter

import (
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/joulemark/joulemark/internal/contract"
	"github.com/joulemark/joulemark/internal/gpu"
	"github.com/joulemark/joulemark/internal/testkit/testenv"
)

// TestSimMetricsPassPromtool: the whole /metrics of a simulated exporter
// after a lifecycle passes `promtool check metrics` (the NVML mock's
// exposition is checked in nvml_test.go, which needs cgo).
func TestSimMetricsPassPromtool(t *testing.T) {
	promtool := testenv.LookPath(t, "promtool")
	h := newHarness(t, gpu.SimConfig{GPUs: 4, Seed: 2, NoiseWatts: 0.5, EnergyCounter: true}, Config{ReleaseHold: time.Second})
	h.post("p", contract.Idle)
	h.step(2 * time.Second)
	for _, p := range []contract.Phase{contract.Startup, contract.Formal, contract.Release} {
		h.post("p", p)
		h.step(3 * time.Second)
	}
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = strings.NewReader(fetchMetricsHandler(t, h.exp))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("promtool check metrics: %v\n%s", err, out)
	}
}
