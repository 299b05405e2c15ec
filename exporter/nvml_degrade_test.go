//go:build cgo

package exporter

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/joulemark/joulemark/gpu"
	"github.com/joulemark/joulemark/internal/nvmlmock"
)

// TestGPULostAtStartIsListedAndRetried: a GPU that fails at start does not
// stop the exporter; it is listed with joulemark_gpu_up 0 and, once it
// opens, sampled with its real identity.
func TestGPULostAtStartIsListedAndRetried(t *testing.T) {
	clk := newFakeClock()
	m := newMockNVML()
	lost := true
	getHandle := m.srv.DeviceGetHandleByIndexFunc
	m.srv.DeviceGetHandleByIndexFunc = func(i int) (nvml.Device, nvml.Return) {
		if i == 2 && lost {
			return nil, nvml.ERROR_UNKNOWN
		}
		return getHandle(i)
	}
	b, err := gpu.NewNVML(m.srv, gpu.NVMLOptions{Clock: clk, MaxGPUs: 3, RetryInterval: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	e, err := New(Config{Backend: b, Clock: clk})
	if err != nil {
		t.Fatalf("one GPU down at start failed the exporter: %v", err)
	}
	defer e.Close()
	step := func(n int) {
		for range n {
			clk.Advance(e.cfg.Interval)
			m.advance(e.cfg.Interval)
			e.SampleOnce()
		}
	}
	e.SampleOnce()
	step(5)
	body := fetchMetricsHandler(t, e)
	for _, want := range []string{`joulemark_gpu_up{gpu="2",uuid=""} 0`, fmt.Sprintf(`joulemark_gpu_up{gpu="1",uuid=%q} 1`, nvmlmock.UUID(1))} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	lost = false
	step(15) // past the 1 s retry
	body = fetchMetricsHandler(t, e)
	for _, want := range []string{
		fmt.Sprintf(`joulemark_gpu_up{gpu="2",uuid=%q} 1`, nvmlmock.UUID(2)),
		// every read of GPU 1 is timed: 21 passes
		fmt.Sprintf(`joulemark_gpu_sample_duration_seconds_count{gpu="1",uuid=%q} 21`, nvmlmock.UUID(1)),
		fmt.Sprintf(`energy_scope="gpu",energy_source="counter",gpu="2",mig_mode="disabled",name="NVIDIA H100 80GB HBM3",pci_bus_id=%q`, nvmlmock.PCIBusID(2)),
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}
