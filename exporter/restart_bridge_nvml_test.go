//go:build cgo

package exporter

import (
	"sync"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/joulemark/joulemark/internal/gpu"
	"github.com/joulemark/joulemark/internal/nvmlmock"
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

// TestRestartMissingNVML is testRestartMissing on the NVML mock: GPU 1's
// handle fails at the restart (the backend retries it every second, then
// less often), and another GPU in its slot has another UUID.
func TestRestartMissingNVML(t *testing.T) {
	testRestartMissing(t, func(clk *fakeClock) missingRig {
		m := newMockNVML()
		var mu sync.Mutex
		hidden := false
		getHandle := m.srv.DeviceGetHandleByIndexFunc
		m.srv.DeviceGetHandleByIndexFunc = func(i int) (nvml.Device, nvml.Return) {
			mu.Lock()
			defer mu.Unlock()
			if i == 1 && hidden {
				return nil, nvml.ERROR_UNKNOWN
			}
			return getHandle(i)
		}
		return missingRig{
			restartRig: restartRig{
				open: func(t *testing.T) gpu.Backend {
					b, err := gpu.NewNVML(m.srv, gpu.NVMLOptions{Clock: clk, MaxGPUs: 2, RetryInterval: time.Second})
					if err != nil {
						t.Fatal(err)
					}
					return b
				},
				tick: m.advance,
			},
			hide: func(h bool) { mu.Lock(); hidden = h; mu.Unlock() },
			swap: func() { nvmlmock.Device(m.srv, 1).UUID = otherUUID },
		}
	})
}
