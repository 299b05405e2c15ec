//go:build cgo

// Package nvmlmock sets up go-nvml's DGX H100 mock the way joulemark's tests
// use it: eight GPUs with stable UUIDs and PCI addresses and fixed
// slow-path readings, whose power and energy functions each test sets
// itself (or through Power, a model of the power and scope functions the
// dgxh100 mock lacks). Symbol lookups answer like a real driver's: a
// symbol is present when the mocked GPUs implement its call, so a test
// removes a call from "the driver" with Missing.
package nvmlmock

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxh100"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"
)

// UUID is the UUID of mocked GPU i (0..8):
// GPU-00000000-0000-4000-8000-00000000000<i>.
func UUID(i int) string {
	return "GPU-00000000-0000-4000-8000-00000000000" + string(rune('0'+i))
}

// PCIBusID is the PCI address of mocked GPU i.
func PCIBusID(i int) string { return fmt.Sprintf("00000000:%02X:00.0", 0x18+0x10*i) }

// symbols maps the optional NVML symbols joulemark looks up to whether a
// mocked GPU implements the call.
var symbols = map[string]func(*server.Device) bool{
	"nvmlDeviceGetCurrentClocksEventReasons":    func(d *server.Device) bool { return d.GetCurrentClocksEventReasonsFunc != nil },
	"nvmlDeviceGetCurrentClocksThrottleReasons": func(d *server.Device) bool { return d.GetCurrentClocksThrottleReasonsFunc != nil },
	"nvmlDeviceGetC2cModeInfoV":                 func(d *server.Device) bool { return false }, // its handler calls the real library
	"nvmlDeviceGetFieldValues":                  func(d *server.Device) bool { return d.GetFieldValuesFunc != nil },
	"nvmlDeviceGetTotalEnergyConsumption":       func(d *server.Device) bool { return d.GetTotalEnergyConsumptionFunc != nil },
	"nvmlDeviceGetMigMode":                      func(d *server.Device) bool { return d.GetMigModeFunc != nil },
	"nvmlDeviceGetArchitecture":                 func(d *server.Device) bool { return d.GetArchitectureFunc != nil },
}

// New returns a DGX H100 mock whose GPU i has UUID(i), PCIBusID(i) and
// answers the slow reads with: memory i+1 GiB used of 80 GiB, utilization
// 10·i %, temperature 30+i °C, enforced power limit 700 W, clocks 1980 MHz,
// clock event reasons 0x5 (GPU idle, SW power cap), no compute processes.
func New() *server.Server {
	s := dgxh100.New()
	for i := range s.Devices {
		dev := Device(s, i)
		dev.UUID = UUID(i)
		dev.GetPciInfoFunc = func() (nvml.PciInfo, nvml.Return) {
			var p nvml.PciInfo
			for k, c := range PCIBusID(i) {
				p.BusId[k] = int8(c)
			}
			return p, nvml.SUCCESS
		}
		dev.GetMemoryInfoFunc = func() (nvml.Memory, nvml.Return) {
			return nvml.Memory{Total: 80 << 30, Used: uint64(i+1) << 30}, nvml.SUCCESS
		}
		dev.GetUtilizationRatesFunc = func() (nvml.Utilization, nvml.Return) { return nvml.Utilization{Gpu: uint32(10 * i)}, nvml.SUCCESS }
		dev.GetTemperatureFunc = func(nvml.TemperatureSensors) (uint32, nvml.Return) { return uint32(30 + i), nvml.SUCCESS }
		dev.GetEnforcedPowerLimitFunc = func() (uint32, nvml.Return) { return 700000, nvml.SUCCESS }
		dev.GetClockInfoFunc = func(nvml.ClockType) (uint32, nvml.Return) { return 1980, nvml.SUCCESS }
		dev.GetCurrentClocksEventReasonsFunc = func() (uint64, nvml.Return) { return 0x1 | 0x4, nvml.SUCCESS }
		dev.GetCurrentClocksThrottleReasonsFunc = func() (uint64, nvml.Return) { return 0x1 | 0x4, nvml.SUCCESS }
		dev.GetComputeRunningProcessesFunc = func() ([]nvml.ProcessInfo, nvml.Return) { return nil, nvml.SUCCESS }
		dev.GetMPSComputeRunningProcessesFunc = func() ([]nvml.ProcessInfo, nvml.Return) { return nil, nvml.SUCCESS }
	}
	s.SystemGetProcessNameFunc = func(int) (string, nvml.Return) { return "", nvml.ERROR_NOT_FOUND }
	s.LookupSymbolFunc = func(name string) error {
		has, known := symbols[name]
		if !known {
			return nil
		}
		if !has(Device(s, 0)) {
			return fmt.Errorf("mock: symbol %s: %w", name, errors.ErrUnsupported)
		}
		return nil
	}
	return s
}

// Missing removes the calls of symbols from every mocked GPU, as an older
// driver lacks them: their lookup fails, and calling one panics (go-nvml's
// mock panics on a nil function; a real process dies on a missing symbol).
func Missing(s *server.Server, symbols ...string) {
	for i := range s.Devices {
		dev := Device(s, i)
		for _, sym := range symbols {
			switch sym {
			case "nvmlDeviceGetCurrentClocksEventReasons":
				dev.GetCurrentClocksEventReasonsFunc = nil
			case "nvmlDeviceGetCurrentClocksThrottleReasons":
				dev.GetCurrentClocksThrottleReasonsFunc = nil
			case "nvmlDeviceGetFieldValues":
				dev.GetFieldValuesFunc = nil
			case "nvmlDeviceGetTotalEnergyConsumption":
				dev.GetTotalEnergyConsumptionFunc = nil
			case "nvmlDeviceGetMigMode":
				dev.GetMigModeFunc = nil
			case "nvmlDeviceGetArchitecture":
				dev.GetArchitectureFunc = nil
			default:
				panic("nvmlmock: Missing does not know " + sym)
			}
		}
	}
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

// PowerModel is what a mocked GPU's power and energy calls answer: power
// fields 185/186 by scope (a scope absent answers NOT_SUPPORTED), the
// energy counter (field 83 and nvmlDeviceGetTotalEnergyConsumption), and
// nvmlDeviceGetPowerUsage. Fields may be changed under Lock.
type PowerModel struct {
	sync.Mutex
	// InstantMW and AverageMW are fields 186 and 185 by ScopeId (0 GPU,
	// 1 module).
	InstantMW, AverageMW map[uint32]uint32
	// Energy is the counter in mJ; nil: the GPU has none.
	Energy func() uint64
	// EnergyFails makes the next EnergyFails counter reads fail
	// (ERROR_UNKNOWN) while power still answers.
	EnergyFails int
	// Ret, when not SUCCESS, is what every power call returns (e.g.
	// ERROR_GPU_IS_LOST).
	Ret nvml.Return
	// Hang, when not nil, blocks every power call until it is closed.
	Hang chan struct{}
	// Calls counts the power calls.
	Calls int
}

// Power installs m as GPU i's power and energy functions and returns it.
func Power(s *server.Server, i int, m *PowerModel) *PowerModel {
	dev := Device(s, i)
	enter := func() nvml.Return {
		m.Lock()
		h := m.Hang
		m.Unlock()
		if h != nil {
			<-h
		}
		m.Lock()
		m.Calls++
		return m.Ret
	}
	dev.GetFieldValuesFunc = func(fv []nvml.FieldValue) nvml.Return {
		ret := enter()
		defer m.Unlock()
		if ret != nvml.SUCCESS {
			return ret
		}
		for k := range fv {
			f := &fv[k]
			switch f.FieldId {
			case nvml.FI_DEV_POWER_INSTANT, nvml.FI_DEV_POWER_AVERAGE:
				src := m.InstantMW
				if f.FieldId == nvml.FI_DEV_POWER_AVERAGE {
					src = m.AverageMW
				}
				if v, ok := src[f.ScopeId]; ok {
					SetField(f, nvml.SUCCESS, nvml.VALUE_TYPE_UNSIGNED_INT, uint64(v))
				} else {
					f.NvmlReturn = uint32(nvml.ERROR_NOT_SUPPORTED)
				}
			case nvml.FI_DEV_TOTAL_ENERGY_CONSUMPTION:
				switch {
				case m.Energy == nil:
					f.NvmlReturn = uint32(nvml.ERROR_NOT_SUPPORTED)
				case m.EnergyFails > 0:
					m.EnergyFails--
					f.NvmlReturn = uint32(nvml.ERROR_UNKNOWN)
				default:
					SetField(f, nvml.SUCCESS, nvml.VALUE_TYPE_UNSIGNED_LONG_LONG, m.Energy())
				}
			default:
				f.NvmlReturn = uint32(nvml.ERROR_NOT_SUPPORTED)
			}
		}
		return nvml.SUCCESS
	}
	dev.GetTotalEnergyConsumptionFunc = func() (uint64, nvml.Return) {
		ret := enter()
		defer m.Unlock()
		switch {
		case ret != nvml.SUCCESS:
			return 0, ret
		case m.Energy == nil:
			return 0, nvml.ERROR_NOT_SUPPORTED
		case m.EnergyFails > 0:
			m.EnergyFails--
			return 0, nvml.ERROR_UNKNOWN
		}
		return m.Energy(), nvml.SUCCESS
	}
	dev.GetPowerUsageFunc = func() (uint32, nvml.Return) {
		ret := enter()
		defer m.Unlock()
		if ret != nvml.SUCCESS {
			return 0, ret
		}
		if v, ok := m.AverageMW[0]; ok {
			return v, nvml.SUCCESS
		}
		if v, ok := m.AverageMW[1]; ok {
			return v, nvml.SUCCESS
		}
		return 0, nvml.ERROR_NOT_SUPPORTED
	}
	return m
}
