//go:build cgo

package exporter

import (
	"testing"

	"github.com/joulemark/joulemark/internal/gpu"
)

// TestRestartBridgeNVML is testRestartBridge on the NVML mock: the raw
// counter is field 83 (NVML's total energy, mJ since the driver loaded),
// its reset a driver reload.
func TestRestartBridgeNVML(t *testing.T) {
	testRestartBridge(t, func(clk *fakeClock) restartRig {
		m := newMockNVML()
		return restartRig{
			open: func(t *testing.T) gpu.Backend {
				b, err := gpu.NewNVML(m.srv, gpu.NVMLOptions{Clock: clk})
				if err != nil {
					t.Fatal(err)
				}
				return b
			},
			tick: m.advance,
			reset: func() {
				m.set(func() {
					for i := range m.counter {
						m.counter[i] = 1000 * uint64(i+1)
					}
				})
			},
		}
	})
}
