//go:build cgo

package gpu

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"sync"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// The NVML fields read in one batched call per tick.
const (
	fieldPowerInstant = nvml.FI_DEV_POWER_INSTANT            // 186, mW, Ampere and later
	fieldPowerAverage = nvml.FI_DEV_POWER_AVERAGE            // 185, mW, ~1 s average
	fieldEnergy       = nvml.FI_DEV_TOTAL_ENERGY_CONSUMPTION // 83, mJ since the driver loaded
)

// NVML reads GPUs through NVML. Every call into the library is made only
// after a successful Init, and none after Close.
type NVML struct {
	lib   nvml.Interface
	clock Clock
	info  []Device
	devs  []*nvmlDevice

	mu     sync.RWMutex
	closed bool
}

type nvmlDevice struct {
	h nvml.Device

	mu       sync.Mutex
	batched  bool // GetFieldValues works on this GPU
	instant  bool // field 186 answered at the probe
	average  bool // field 185 answered at the probe
	counter  bool // an energy counter is readable
	fieldBuf [3]nvml.FieldValue
}

// OpenNVML loads the system's NVML library (libnvidia-ml.so.1) and opens
// every GPU.
func OpenNVML(opts NVMLOptions) (Backend, error) {
	b, err := NewNVML(nvml.New(), opts)
	if err != nil {
		return nil, err
	}
	return b, nil
}

// NewNVML initializes lib (the real library, or go-nvml's mock in tests) and
// probes every GPU for instant power, average power and the energy counter.
func NewNVML(lib nvml.Interface, opts NVMLOptions) (*NVML, error) {
	if opts.Clock == nil {
		opts.Clock = RealClock{}
	}
	if ret := lib.Init(); ret != nvml.SUCCESS {
		if ret == nvml.ERROR_LIBRARY_NOT_FOUND {
			return nil, errors.New("nvml: the NVML library (libnvidia-ml.so.1) was not found: no NVIDIA driver here; use --gpu=sim for simulated GPUs")
		}
		return nil, fmt.Errorf("nvml: init: %s (is the NVIDIA driver loaded? use --gpu=sim for simulated GPUs)", nvml.ErrorString(ret))
	}
	b := &NVML{lib: lib, clock: opts.Clock}
	if err := b.open(opts.MaxGPUs); err != nil {
		_ = lib.Shutdown()
		return nil, err
	}
	return b, nil
}

func (b *NVML) open(maxGPUs int) error {
	n, ret := b.lib.DeviceGetCount()
	if ret != nvml.SUCCESS {
		return fmt.Errorf("nvml: counting GPUs: %s", nvml.ErrorString(ret))
	}
	if n == 0 {
		return errors.New("nvml: no GPU found; use --gpu=sim for simulated GPUs")
	}
	if maxGPUs > 0 && maxGPUs < n {
		n = maxGPUs
	}
	driver, ret := b.lib.SystemGetDriverVersion()
	if ret != nvml.SUCCESS {
		driver = "unknown"
	}
	for i := range n {
		h, ret := b.lib.DeviceGetHandleByIndex(i)
		if ret != nvml.SUCCESS {
			return fmt.Errorf("nvml: GPU %d: getting its handle: %s", i, nvml.ErrorString(ret))
		}
		d := Device{Index: i, DriverVersion: driver}
		if d.UUID, ret = h.GetUUID(); ret != nvml.SUCCESS {
			return fmt.Errorf("nvml: GPU %d: reading its UUID: %s", i, nvml.ErrorString(ret))
		}
		if d.Name, ret = h.GetName(); ret != nvml.SUCCESS {
			d.Name = "unknown"
		}
		if mem, ret := h.GetMemoryInfo(); ret == nvml.SUCCESS {
			d.MemoryTotalBytes = mem.Total
		}
		dev := &nvmlDevice{h: h}
		if err := dev.probe(i); err != nil {
			return err
		}
		d.PowerSource = PowerAverage
		if dev.instant {
			d.PowerSource = PowerInstant
		}
		d.EnergySource = EnergyIntegrated
		if dev.counter {
			d.EnergySource = EnergyCounter
		}
		b.info = append(b.info, d)
		b.devs = append(b.devs, dev)
	}
	return nil
}

// probe finds what the GPU answers: the batched fields, or the
// single-value fallbacks.
func (d *nvmlDevice) probe(i int) error {
	d.fieldBuf = [3]nvml.FieldValue{{FieldId: fieldPowerInstant}, {FieldId: fieldPowerAverage}, {FieldId: fieldEnergy}}
	if ret := d.h.GetFieldValues(d.fieldBuf[:]); ret == nvml.SUCCESS {
		d.batched = true
		d.instant = d.fieldBuf[0].NvmlReturn == uint32(nvml.SUCCESS)
		d.average = d.fieldBuf[1].NvmlReturn == uint32(nvml.SUCCESS)
		d.counter = d.fieldBuf[2].NvmlReturn == uint32(nvml.SUCCESS)
	}
	if !d.counter {
		_, ret := d.h.GetTotalEnergyConsumption()
		d.counter = ret == nvml.SUCCESS
	}
	if !d.instant && !d.average {
		if _, ret := d.h.GetPowerUsage(); ret != nvml.SUCCESS {
			return fmt.Errorf("nvml: GPU %d: it reports no power (field values and nvmlDeviceGetPowerUsage: %s)", i, nvml.ErrorString(ret))
		}
	}
	return nil
}

// Devices lists the GPUs.
func (b *NVML) Devices() []Device { return append([]Device(nil), b.info...) }

func nvmlErr(i int, what string, ret nvml.Return) error {
	if ret == nvml.ERROR_GPU_IS_LOST {
		return fmt.Errorf("nvml: GPU %d: %s: %w", i, what, ErrGPULost)
	}
	return fmt.Errorf("nvml: GPU %d: %s: %s", i, what, nvml.ErrorString(ret))
}

// fieldValue decodes a FieldValue by its ValueType.
func fieldValue(f nvml.FieldValue) (float64, bool) {
	if f.NvmlReturn != uint32(nvml.SUCCESS) {
		return 0, false
	}
	v := f.Value[:]
	switch nvml.ValueType(f.ValueType) {
	case nvml.VALUE_TYPE_DOUBLE:
		return math.Float64frombits(binary.LittleEndian.Uint64(v)), true
	case nvml.VALUE_TYPE_UNSIGNED_INT:
		return float64(binary.LittleEndian.Uint32(v)), true
	case nvml.VALUE_TYPE_UNSIGNED_LONG, nvml.VALUE_TYPE_UNSIGNED_LONG_LONG:
		return float64(binary.LittleEndian.Uint64(v)), true
	case nvml.VALUE_TYPE_SIGNED_LONG_LONG:
		return float64(int64(binary.LittleEndian.Uint64(v))), true
	case nvml.VALUE_TYPE_SIGNED_INT:
		return float64(int32(binary.LittleEndian.Uint32(v))), true
	case nvml.VALUE_TYPE_UNSIGNED_SHORT:
		return float64(binary.LittleEndian.Uint16(v)), true
	}
	return 0, false
}

// Sample reads GPU i's power and energy counter: one batched GetFieldValues
// for instant power, average power and the energy counter, each field's own
// return code checked, with nvmlDeviceGetPowerUsage and
// nvmlDeviceGetTotalEnergyConsumption as fallbacks.
func (b *NVML) Sample(i int) (Sample, error) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	if b.closed {
		return Sample{}, errors.New("nvml: backend closed")
	}
	if i < 0 || i >= len(b.devs) {
		return Sample{}, fmt.Errorf("nvml: no GPU %d", i)
	}
	d := b.devs[i]
	d.mu.Lock()
	defer d.mu.Unlock()
	var s Sample
	instant, average, energy := math.NaN(), math.NaN(), math.NaN()
	if d.batched {
		d.fieldBuf = [3]nvml.FieldValue{{FieldId: fieldPowerInstant}, {FieldId: fieldPowerAverage}, {FieldId: fieldEnergy}}
		switch ret := d.h.GetFieldValues(d.fieldBuf[:]); ret {
		case nvml.SUCCESS:
			if v, ok := fieldValue(d.fieldBuf[0]); ok {
				instant = v / 1000
			}
			if v, ok := fieldValue(d.fieldBuf[1]); ok {
				average = v / 1000
			}
			if v, ok := fieldValue(d.fieldBuf[2]); ok {
				energy = v / 1000
			}
		case nvml.ERROR_GPU_IS_LOST:
			return s, nvmlErr(i, "reading power fields", ret)
		}
	}
	s.Time = b.clock.Now()
	switch {
	case !math.IsNaN(instant):
		s.PowerWatts = instant
	case !math.IsNaN(average):
		s.PowerWatts = average
	default:
		mw, ret := d.h.GetPowerUsage()
		if ret != nvml.SUCCESS {
			return s, nvmlErr(i, "reading power", ret)
		}
		s.PowerWatts = float64(mw) / 1000
	}
	if !math.IsNaN(average) {
		s.AvgPowerWatts = average
	}
	if d.counter {
		if math.IsNaN(energy) {
			mj, ret := d.h.GetTotalEnergyConsumption()
			if ret == nvml.SUCCESS {
				energy = float64(mj) / 1000
			} else if ret == nvml.ERROR_GPU_IS_LOST {
				return s, nvmlErr(i, "reading the energy counter", ret)
			}
		}
		if !math.IsNaN(energy) {
			s.EnergyJoules, s.HasEnergy = energy, true
		}
	}
	return s, nil
}

// SlowSample reads memory, utilization, temperature, enforced power limit,
// SM clock, clock-event reasons and compute processes of GPU i. Values the
// GPU does not give are NaN; a lost GPU is an error.
func (b *NVML) SlowSample(i int) (SlowSample, error) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	if b.closed {
		return SlowSample{}, errors.New("nvml: backend closed")
	}
	if i < 0 || i >= len(b.devs) {
		return SlowSample{}, fmt.Errorf("nvml: no GPU %d", i)
	}
	h := b.devs[i].h
	nan := math.NaN()
	s := SlowSample{MemoryUsedBytes: nan, UtilizationRatio: nan, TemperatureCelsius: nan, PowerLimitWatts: nan, SMClockHertz: nan, ComputeProcesses: -1}
	lost := false
	ok := func(ret nvml.Return) bool {
		lost = lost || ret == nvml.ERROR_GPU_IS_LOST
		return ret == nvml.SUCCESS
	}
	if m, ret := h.GetMemoryInfo(); ok(ret) {
		s.MemoryUsedBytes = float64(m.Used)
	}
	if u, ret := h.GetUtilizationRates(); ok(ret) {
		s.UtilizationRatio = float64(u.Gpu) / 100
	}
	if t, ret := h.GetTemperature(nvml.TEMPERATURE_GPU); ok(ret) {
		s.TemperatureCelsius = float64(t)
	}
	if l, ret := h.GetEnforcedPowerLimit(); ok(ret) {
		s.PowerLimitWatts = float64(l) / 1000
	}
	if c, ret := h.GetClockInfo(nvml.CLOCK_SM); ok(ret) {
		s.SMClockHertz = float64(c) * 1e6
	}
	if r, ret := h.GetCurrentClocksEventReasons(); ok(ret) {
		s.ClockEventReasons, s.HasClockEvents = r, true
	}
	if p, ret := h.GetComputeRunningProcesses(); ok(ret) {
		s.ComputeProcesses = len(p)
	}
	if lost {
		return s, nvmlErr(i, "reading slow metrics", nvml.ERROR_GPU_IS_LOST)
	}
	return s, nil
}

// Close shuts NVML down; later calls answer an error and never reach the
// library.
func (b *NVML) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil
	}
	b.closed = true
	if ret := b.lib.Shutdown(); ret != nvml.SUCCESS {
		return fmt.Errorf("nvml: shutdown: %s", nvml.ErrorString(ret))
	}
	return nil
}
