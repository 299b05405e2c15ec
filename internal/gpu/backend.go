// Package gpu reads GPU power and energy: through NVML (github.com/NVIDIA/go-nvml)
// or from simulated GPUs whose exact energy is known. Both implement Backend.
package gpu

import (
	"errors"
	"time"
)

// Power and energy sources reported in Device.
const (
	PowerInstant = "instant" // NVML FI_DEV_POWER_INSTANT (Ampere and later)
	PowerAverage = "average" // NVML power averaged over ~1 s (nvmlDeviceGetPowerUsage / FI_DEV_POWER_AVERAGE)
	PowerSim     = "sim"     // simulated power function

	EnergyCounter    = "counter"    // the GPU's own energy counter
	EnergyIntegrated = "integrated" // trapezoid integration of power samples

	// ScopeGPU: power/energy of the GPU board. ScopeModule: the whole
	// module, on C2C superchips (Grace Hopper, Grace Blackwell) the Grace
	// CPU and its memory included.
	ScopeGPU    = "gpu"
	ScopeModule = "module"

	// MIG modes in Device.MIGMode.
	MIGEnabled     = "enabled"
	MIGDisabled    = "disabled"
	MIGUnsupported = "unsupported"
)

// ErrGPULost is wrapped by errors from a GPU that fell off the bus or
// otherwise stopped answering; the exporter marks it unhealthy.
var ErrGPULost = errors.New("GPU lost")

// Device describes one GPU and how it is measured.
type Device struct {
	Index         int    `json:"gpu"`
	UUID          string `json:"uuid"`
	Name          string `json:"name"`
	DriverVersion string `json:"driver_version"`
	// PowerSource is PowerInstant, PowerAverage or PowerSim.
	PowerSource string `json:"power_source"`
	// EnergySource is EnergyCounter when Sample carries the GPU's energy
	// counter, else EnergyIntegrated.
	EnergySource string `json:"energy_source"`
	// MemoryTotalBytes is the GPU memory size, 0 when unknown.
	MemoryTotalBytes uint64 `json:"memory_total_bytes"`
	// PCIBusID is the GPU's PCI address (stable across reboots, unlike
	// Index), "" when unknown.
	PCIBusID string `json:"pci_bus_id"`
	// Architecture is e.g. "hopper", "unknown" when not told.
	Architecture string `json:"architecture"`
	// MIGMode is MIGEnabled, MIGDisabled or MIGUnsupported. Under MIG,
	// power and the energy counter still cover the whole GPU.
	MIGMode string `json:"mig_mode"`
	// PowerScope and EnergyScope are ScopeGPU or ScopeModule; a backend
	// never mixes them (a module-wide counter with GPU-only power falls
	// back to integrating the power).
	PowerScope  string `json:"power_scope"`
	EnergyScope string `json:"energy_scope"`
	// Err says why the GPU could not be opened ("" once it is); such a GPU
	// is listed, answers errors, and is retried.
	Err string `json:"error,omitempty"`
}

// Sample is one fast reading of a GPU.
type Sample struct {
	// Time is when the reading was taken (monotonic where the clock has it).
	Time time.Time
	// PowerWatts is the power the Device's PowerSource names, unless
	// PowerSource is set.
	PowerWatts float64
	// PowerSource, when not empty, is what PowerWatts is this time
	// (PowerInstant, PowerAverage): the GPU's power field failed and a
	// fallback call (nvmlDeviceGetPowerUsage) answered.
	PowerSource string
	// EnergyJoules is the GPU's cumulative energy counter; valid when
	// HasEnergy. It may reset (decrease), e.g. on a driver reload.
	EnergyJoules float64
	HasEnergy    bool
}

// SlowSample is the context a GPU is read for at a lower rate (1 Hz).
// Fields the GPU cannot give are NaN (ComputeProcesses: -1).
type SlowSample struct {
	MemoryUsedBytes    float64
	UtilizationRatio   float64
	TemperatureCelsius float64
	PowerLimitWatts    float64
	SMClockHertz       float64
	// ClockEventReasons is NVML's clocks-event-reasons bit mask; HasClockEvents
	// says whether it was read.
	ClockEventReasons uint64
	HasClockEvents    bool
	// ComputeProcesses is the number of compute processes on the GPU, -1
	// when it cannot be told.
	ComputeProcesses int
	// ComputePIDs are those processes' PIDs, sorted (nil when they cannot
	// be told): what the release's process criterion compares with the
	// idle phase's. An MPS server is not one of them; its clients are.
	ComputePIDs []uint32
	// AvgPowerWatts is NVML's ~1 s average power (field 185), read at this
	// rate because it changes no faster.
	AvgPowerWatts float64
}

// Backend reads a set of GPUs. Sample and SlowSample may be called
// concurrently for different indexes, and concurrently with each other.
type Backend interface {
	// Devices lists the GPUs, index i at position i.
	Devices() []Device
	// Sample reads GPU i's power (and energy counter); it is called at the
	// sampling rate and must be cheap.
	Sample(i int) (Sample, error)
	// SlowSample reads GPU i's memory, utilization, temperature, power
	// limit, SM clock and clock-event reasons.
	SlowSample(i int) (SlowSample, error)
	// Close releases the backend.
	Close() error
}

// Clock tells the time; tests inject a fake one.
type Clock interface {
	Now() time.Time
}

// RealClock is the system clock.
type RealClock struct{}

// Now returns time.Now().
func (RealClock) Now() time.Time { return time.Now() }
