//go:build cgo

// Package nvmlmock sets up go-nvml's DGX H100 mock the way joulemark's tests
// use it: eight GPUs with stable UUIDs and fixed slow-path readings, whose
// power and energy functions each test sets itself.
package nvmlmock

import (
	"encoding/binary"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxh100"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"
)

// UUID is the UUID of mocked GPU i (0..8):
// GPU-00000000-0000-4000-8000-00000000000<i>.
func UUID(i int) string {
	return "GPU-00000000-0000-4000-8000-00000000000" + string(rune('0'+i))
}

// New returns a DGX H100 mock whose GPU i has UUID(i) and answers the slow
// reads with: memory i+1 GiB used of 80 GiB, utilization 10·i %,
// temperature 30+i °C, enforced power limit 700 W, clocks 1980 MHz, clock
// event reasons 0x5 (GPU idle, SW power cap), no compute processes.
func New() *server.Server {
	s := dgxh100.New()
	for i := range s.Devices {
		dev := Device(s, i)
		dev.UUID = UUID(i)
		dev.GetMemoryInfoFunc = func() (nvml.Memory, nvml.Return) {
			return nvml.Memory{Total: 80 << 30, Used: uint64(i+1) << 30}, nvml.SUCCESS
		}
		dev.GetUtilizationRatesFunc = func() (nvml.Utilization, nvml.Return) { return nvml.Utilization{Gpu: uint32(10 * i)}, nvml.SUCCESS }
		dev.GetTemperatureFunc = func(nvml.TemperatureSensors) (uint32, nvml.Return) { return uint32(30 + i), nvml.SUCCESS }
		dev.GetEnforcedPowerLimitFunc = func() (uint32, nvml.Return) { return 700000, nvml.SUCCESS }
		dev.GetClockInfoFunc = func(nvml.ClockType) (uint32, nvml.Return) { return 1980, nvml.SUCCESS }
		dev.GetCurrentClocksEventReasonsFunc = func() (uint64, nvml.Return) { return 0x1 | 0x4, nvml.SUCCESS }
		dev.GetComputeRunningProcessesFunc = func() ([]nvml.ProcessInfo, nvml.Return) { return nil, nvml.SUCCESS }
	}
	return s
}

// Device is the mock's GPU i.
func Device(s *server.Server, i int) *server.Device { return s.Devices[i].(*server.Device) }

// SetField fills a field value the way NVML's GetFieldValues does: its
// return, value type and value (little-endian in the value union).
func SetField(f *nvml.FieldValue, ret nvml.Return, vt nvml.ValueType, v uint64) {
	f.NvmlReturn = uint32(ret)
	f.ValueType = uint32(vt)
	binary.LittleEndian.PutUint64(f.Value[:], v)
}
