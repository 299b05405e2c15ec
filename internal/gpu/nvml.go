//go:build cgo

package gpu

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/cenkalti/backoff/v5"
)

// The NVML fields read in one batched call per tick.
const (
	fieldPowerInstant = nvml.FI_DEV_POWER_INSTANT            // 186, mW, Ampere and later
	fieldPowerAverage = nvml.FI_DEV_POWER_AVERAGE            // 185, mW, ~1 s average
	fieldEnergy       = nvml.FI_DEV_TOTAL_ENERGY_CONSUMPTION // 83, mJ since the driver loaded
)

// NVML scope IDs of the power fields (nvmlPowerScopeType_t).
const (
	scopeGPU    = 0 // NVML_POWER_SCOPE_GPU
	scopeModule = 1 // NVML_POWER_SCOPE_MODULE: GPU + CPU + memory on C2C superchips
)

// Optional NVML symbols: newer than the oldest driver joulemark supports
// (R470), each looked up before use, because go-nvml resolves symbols
// lazily and calling a missing one kills the process.
const (
	symClocksEventReasons    = "nvmlDeviceGetCurrentClocksEventReasons"    // R535
	symClocksThrottleReasons = "nvmlDeviceGetCurrentClocksThrottleReasons" // the older name of the same call
	symC2cModeInfo           = "nvmlDeviceGetC2cModeInfoV"                 // R550 (Grace Hopper)
	symFieldValues           = "nvmlDeviceGetFieldValues"
	symTotalEnergy           = "nvmlDeviceGetTotalEnergyConsumption"
	symMigMode               = "nvmlDeviceGetMigMode"
	symArchitecture          = "nvmlDeviceGetArchitecture"
	symMPSProcesses          = "nvmlDeviceGetMPSComputeRunningProcesses"
	symProcessName           = "nvmlSystemGetProcessName"
)

var optionalSymbols = []string{symClocksEventReasons, symClocksThrottleReasons, symC2cModeInfo, symFieldValues, symTotalEnergy, symMigMode, symArchitecture,
	symMPSProcesses, symProcessName}

// maxRetryWait is how far the wait between reopen attempts of a GPU that
// failed to open doubles (unless NVMLOptions.RetryInterval is longer).
const maxRetryWait = 5 * time.Minute

// NVML reads GPUs through NVML. Every call into the library is made only
// after a successful Init, and none after Close. A GPU that cannot be
// opened is listed (Device.Err says why), answers errors, and is opened
// again at most every NVMLOptions.RetryInterval.
type NVML struct {
	lib     nvml.Interface
	clock   Clock
	opts    NVMLOptions
	syms    map[string]bool // optional symbols present in the loaded library
	driver  string
	version string // NVML library version
	cuda    string // CUDA driver version

	mu     sync.RWMutex // held (read) across every library call; Close takes it
	closed bool
	slots  []*nvmlSlot

	infoMu sync.RWMutex
	info   []Device
}

// nvmlSlot is GPU i's place in the backend: its device once opened, and
// when opening it is tried again meanwhile.
type nvmlSlot struct {
	dev atomic.Pointer[nvmlDevice] // nil until the GPU opened; then never changes

	mu        sync.Mutex // serializes opening and the retry times
	nextRetry time.Time
	retryWait time.Duration
}

// nvmlDevice is an opened GPU: a handle and what its probe found, fixed once
// published in its slot. Only use (through device) hands one out, so no
// call can reach a GPU that did not open.
type nvmlDevice struct {
	h       nvml.Device // never nil
	batched bool        // GetFieldValues works on this GPU
	instant bool        // field 186 answered at the probe
	average bool        // field 185 answered at the probe
	counter bool        // the energy counter is used
	scope   uint32      // the power fields' ScopeId
	usage   string      // what nvmlDeviceGetPowerUsage reads on this GPU (PowerInstant or PowerAverage)

	mu       sync.Mutex // serializes the fast read (fieldBuf)
	fieldBuf [2]nvml.FieldValue
}

// OpenNVML loads the system's NVML library (libnvidia-ml.so.1) and opens
// every GPU, retrying nvmlInit as opts say.
func OpenNVML(opts NVMLOptions) (Backend, error) {
	b, err := NewNVML(nvml.New(), opts)
	if err != nil {
		return nil, err
	}
	return b, nil
}

// NewNVML initializes lib (the real library, or go-nvml's mock in tests) and
// probes every GPU for instant power, average power and the energy counter,
// at GPU and module scope. nvmlInit is retried with exponential backoff for
// opts.InitTimeout (no retry when 0, nor when the library is missing). It
// fails when no GPU could be opened within opts.InitTimeout.
func NewNVML(lib nvml.Interface, opts NVMLOptions) (*NVML, error) {
	if opts.Clock == nil {
		opts.Clock = RealClock{}
	}
	if opts.RetryInterval == 0 {
		opts.RetryInterval = 10 * time.Second
	}
	if err := initNVML(lib, opts); err != nil {
		return nil, err
	}
	b := &NVML{lib: lib, clock: opts.Clock, opts: opts, syms: map[string]bool{}}
	if err := b.open(); err != nil {
		_ = lib.Shutdown()
		return nil, err
	}
	return b, nil
}

// initNVML calls nvmlInit until it succeeds, the library is missing, or
// opts.InitTimeout passed (driver containers can start after the exporter).
func initNVML(lib nvml.Interface, opts NVMLOptions) error {
	op := func() (struct{}, error) {
		switch ret := lib.Init(); ret {
		case nvml.SUCCESS:
			return struct{}{}, nil
		case nvml.ERROR_LIBRARY_NOT_FOUND:
			return struct{}{}, backoff.Permanent(errors.New("nvml: the NVML library (libnvidia-ml.so.1) was not found: no NVIDIA driver here; use --gpu=sim for simulated GPUs"))
		default:
			return struct{}{}, fmt.Errorf("nvml: init: %s (is the NVIDIA driver loaded? use --gpu=sim for simulated GPUs)", nvml.ErrorString(ret))
		}
	}
	if opts.InitTimeout <= 0 {
		_, err := op()
		var perm *backoff.PermanentError
		if errors.As(err, &perm) {
			return perm.Unwrap()
		}
		return err
	}
	bo := backoff.NewExponentialBackOff()
	bo.InitialInterval, bo.MaxInterval = 500*time.Millisecond, 15*time.Second
	_, err := backoff.Retry(context.Background(), op, backoff.WithBackOff(bo), backoff.WithMaxElapsedTime(opts.InitTimeout),
		backoff.WithNotify(func(err error, next time.Duration) {
			if opts.Logger != nil {
				opts.Logger.Warn("NVML not ready; retrying", "err", err, "retry_in", next)
			}
		}))
	if err != nil {
		return fmt.Errorf("%w (retried for %v)", err, opts.InitTimeout)
	}
	return nil
}

func (b *NVML) open() error {
	n, ret := b.lib.DeviceGetCount()
	if ret != nvml.SUCCESS {
		return fmt.Errorf("nvml: counting GPUs: %s", nvml.ErrorString(ret))
	}
	if n == 0 {
		return errors.New("nvml: no GPU found; use --gpu=sim for simulated GPUs")
	}
	if b.opts.MaxGPUs > 0 && b.opts.MaxGPUs < n {
		n = b.opts.MaxGPUs
	}
	ext := b.lib.Extensions()
	for _, s := range optionalSymbols {
		b.syms[s] = ext.LookupSymbol(s) == nil
	}
	var r nvml.Return
	if b.driver, r = b.lib.SystemGetDriverVersion(); r != nvml.SUCCESS {
		b.driver = "unknown"
	}
	if b.version, r = b.lib.SystemGetNVMLVersion(); r != nvml.SUCCESS {
		b.version = "unknown"
	}
	if c, r := b.lib.SystemGetCudaDriverVersion(); r == nvml.SUCCESS {
		b.cuda = fmt.Sprintf("%d.%d", c/1000, c%1000/10)
	}
	b.info = make([]Device, n)
	b.slots = make([]*nvmlSlot, n)
	ok := 0
	for i := range n {
		b.slots[i] = &nvmlSlot{retryWait: b.opts.RetryInterval}
		d, dev, err := b.openDevice(i)
		if err != nil {
			b.info[i] = Device{Index: i, Name: "unknown", DriverVersion: b.driver, Err: err.Error()}
			b.slots[i].nextRetry = b.clock.Now().Add(b.opts.RetryInterval)
			if b.opts.Logger != nil {
				b.opts.Logger.Warn("GPU could not be opened; listing it down and retrying", "gpu", i, "err", err, "retry_every", b.opts.RetryInterval)
			}
			continue
		}
		b.info[i] = d
		b.slots[i].dev.Store(dev)
		ok++
	}
	if ok == 0 {
		return b.waitForAny(n)
	}
	return nil
}

// waitForAny retries opening the GPUs until one opens or InitTimeout passed.
func (b *NVML) waitForAny(n int) error {
	bo := backoff.NewExponentialBackOff()
	bo.InitialInterval, bo.MaxInterval = 500*time.Millisecond, 15*time.Second
	_, err := backoff.Retry(context.Background(), func() (struct{}, error) {
		var errs []error
		for i := range n {
			d, dev, err := b.openDevice(i)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			b.info[i] = d
			b.slots[i].dev.Store(dev)
			return struct{}{}, nil
		}
		return struct{}{}, errors.Join(errs...)
	}, backoff.WithBackOff(bo), backoff.WithMaxElapsedTime(max(b.opts.InitTimeout, time.Nanosecond)), backoff.WithMaxTries(retriesFor(b.opts.InitTimeout)))
	if err != nil {
		return fmt.Errorf("nvml: no GPU could be opened: %w", err)
	}
	return nil
}

func retriesFor(timeout time.Duration) uint {
	if timeout <= 0 {
		return 1
	}
	return 0 // bounded by the elapsed time
}

// openDevice gets GPU i's handle and identity and probes what it answers.
func (b *NVML) openDevice(i int) (Device, *nvmlDevice, error) {
	h, ret := b.lib.DeviceGetHandleByIndex(i)
	if ret != nvml.SUCCESS {
		return Device{}, nil, nvmlErr(i, "getting its handle", ret)
	}
	d := Device{Index: i, DriverVersion: b.driver, MIGMode: MIGUnsupported}
	if d.UUID, ret = h.GetUUID(); ret != nvml.SUCCESS {
		return Device{}, nil, nvmlErr(i, "reading its UUID", ret)
	}
	if d.Name, ret = h.GetName(); ret != nvml.SUCCESS {
		d.Name = "unknown"
	}
	if mem, ret := h.GetMemoryInfo(); ret == nvml.SUCCESS {
		d.MemoryTotalBytes = mem.Total
	}
	var pciID uint32
	if pci, ret := h.GetPciInfo(); ret == nvml.SUCCESS {
		d.PCIBusID = cString(pci.BusId[:])
		pciID = pci.PciDeviceId
	}
	arch := nvml.DeviceArchitecture(nvml.DEVICE_ARCH_UNKNOWN)
	if b.syms[symArchitecture] {
		if a, ret := h.GetArchitecture(); ret == nvml.SUCCESS {
			arch = a
		}
	}
	d.Architecture = archName(arch)
	if b.syms[symMigMode] {
		if cur, _, ret := h.GetMigMode(); ret == nvml.SUCCESS {
			d.MIGMode = MIGDisabled
			if cur == nvml.DEVICE_MIG_ENABLE {
				d.MIGMode = MIGEnabled
			}
		}
	}
	dev := &nvmlDevice{h: h, usage: powerUsageSource(arch, d.Name, pciID)}
	trace, err := dev.probe(i, b.syms[symFieldValues], b.syms[symTotalEnergy])
	if err != nil {
		return Device{}, nil, err
	}
	c2c := b.c2cEnabled(h)
	d.PowerScope = scopeName(dev.scope)
	d.EnergyScope = d.PowerScope
	if dev.counter {
		d.EnergyScope = ScopeGPU
		if counterCoversModule(d.Name, c2c, dev.scope) {
			d.EnergyScope = ScopeModule
		}
	}
	// Never mix scopes: a module-wide counter with GPU-only power would
	// count the CPU in energy but not in power. Integrate the power instead.
	if dev.counter && d.EnergyScope != d.PowerScope {
		trace = append(trace, fmt.Sprintf("counter not used: it covers the %s, power the %s; energy integrated from power", d.EnergyScope, d.PowerScope))
		dev.counter = false
		d.EnergyScope = d.PowerScope
	}
	if b.opts.Logger != nil {
		b.opts.Logger.Info("GPU probed", "gpu", i, "name", d.Name, "c2c", c2c, "power_scope", d.PowerScope, "energy_scope", d.EnergyScope, "steps", strings.Join(trace, "; "))
	}
	switch {
	case dev.instant:
		d.PowerSource = PowerInstant
	case dev.average:
		d.PowerSource = PowerAverage
	default:
		d.PowerSource = dev.usage
	}
	d.EnergySource = EnergyIntegrated
	if dev.counter {
		d.EnergySource = EnergyCounter
	}
	return d, dev, nil
}

// counterCoversModule tells whether the GPU's energy counter (field 83 has
// no scope) covers the whole module: on C2C superchips (Grace Hopper,
// Grace Blackwell) NVML reports module energy, Grace CPU and memory
// included; a GPU whose power is only readable at module scope is one.
func counterCoversModule(name string, c2c bool, powerScope uint32) bool {
	if c2c || powerScope == scopeModule {
		return true
	}
	n := strings.ToUpper(name)
	return strings.Contains(n, "GH200") || strings.Contains(n, "GB200") || strings.Contains(n, "GB300")
}

// c2cEnabled reads the C2C mode where the driver has the call.
func (b *NVML) c2cEnabled(h nvml.Device) bool {
	if !b.syms[symC2cModeInfo] {
		return false
	}
	on, ret := c2cMode(h)
	return ret == nvml.SUCCESS && on
}

// c2cMode calls nvmlDeviceGetC2cModeInfoV (a variable: go-nvml's mock
// cannot answer this call, so tests replace it).
var c2cMode = func(h nvml.Device) (bool, nvml.Return) {
	info, ret := h.GetC2cModeInfoV().V1()
	return info.IsC2cEnabled != 0, ret
}

// powerUsageSource is what nvmlDeviceGetPowerUsage returns: a 1 s average on
// Ampere (except GA100) and later, instantaneous power on GA100 and older.
func powerUsageSource(arch nvml.DeviceArchitecture, name string, pciDeviceID uint32) string {
	if arch == nvml.DEVICE_ARCH_UNKNOWN {
		return PowerAverage // newer than this go-nvml knows, or not told
	}
	if arch < nvml.DEVICE_ARCH_AMPERE || (arch == nvml.DEVICE_ARCH_AMPERE && isGA100(pciDeviceID, name)) {
		return PowerInstant
	}
	return PowerAverage
}

// nvidiaVendor is NVIDIA's PCI vendor id, the low 16 bits of
// nvmlPciInfo_t.pciDeviceId (the device id is the high 16).
const nvidiaVendor = 0x10de

// isGA100 tells a GA100 GPU (A100, A30, A800, CMP 170HX) by its PCI device
// id, 0x2080–0x20FF, where NVML gives it; else by its exact marketing name.
// No substring: "NVIDIA RTX A1000" (GA107) and "NVIDIA RTX A3000" (GA104)
// contain "A100" and "A30".
func isGA100(pciDeviceID uint32, name string) bool {
	if pciDeviceID&0xffff == nvidiaVendor {
		id := pciDeviceID >> 16
		return id >= 0x2080 && id <= 0x20ff
	}
	return ga100Names[strings.TrimPrefix(name, "NVIDIA ")]
}

// ga100Names are the names NVML gives GA100 boards.
var ga100Names = map[string]bool{
	"A100-SXM4-40GB": true, "A100-SXM4-80GB": true, "A100-PCIE-40GB": true, "A100-PCIE-80GB": true,
	"A100 80GB PCIe": true, "A100-SXM-64GB": true, "A100-SXM-80GB": true, "A100X": true,
	"A30": true, "A30X": true, "A30 24GB": true,
	"A800-SXM4-80GB": true, "A800-SXM4-40GB": true, "A800 80GB PCIe": true, "A800 40GB PCIe": true, "A800 40GB Active": true,
	"A800 80GB PCIe LC": true, "AX800": true, "PG506-207": true, "PG506-217": true, "PG506-232": true, "PG506-242": true, "PG506-243": true,
}

func archName(a nvml.DeviceArchitecture) string {
	switch a {
	case nvml.DEVICE_ARCH_KEPLER:
		return "kepler"
	case nvml.DEVICE_ARCH_MAXWELL:
		return "maxwell"
	case nvml.DEVICE_ARCH_PASCAL:
		return "pascal"
	case nvml.DEVICE_ARCH_VOLTA:
		return "volta"
	case nvml.DEVICE_ARCH_TURING:
		return "turing"
	case nvml.DEVICE_ARCH_AMPERE:
		return "ampere"
	case nvml.DEVICE_ARCH_ADA:
		return "ada"
	case nvml.DEVICE_ARCH_HOPPER:
		return "hopper"
	case nvml.DEVICE_ARCH_BLACKWELL:
		return "blackwell"
	case nvml.DEVICE_ARCH_RUBIN:
		return "rubin"
	}
	return "unknown"
}

// cString converts a NUL-terminated C char array.
func cString(b []int8) string {
	out := make([]byte, 0, len(b))
	for _, c := range b {
		if c == 0 {
			break
		}
		out = append(out, byte(c))
	}
	return string(out)
}

// probe finds how GPU i is measured, in this order (the first that answers
// wins; docs/exporter.md, Scopes):
//
//	power   1. fields 186/185 at GPU scope (one GetFieldValues, field 83 with them)
//	        2. fields 186/185 at module scope, when step 1 gave neither
//	           (its whole call failing included): GPU scope unsupported, as
//	           reported for C2C superchips
//	        3. nvmlDeviceGetPowerUsage, GPU scope as NVML documents it
//	energy  1. field 83, read with the power fields
//	        2. nvmlDeviceGetTotalEnergyConsumption
//	        3. none: power is integrated
//
// The counter's scope and the pairing of scopes are decided by openDevice.
// The steps taken are kept in trace for the log.
func (d *nvmlDevice) probe(i int, haveFields, haveEnergy bool) (trace []string, err error) {
	if haveFields {
		for _, scope := range []uint32{scopeGPU, scopeModule} {
			name := scopeName(scope)
			buf := []nvml.FieldValue{{FieldId: fieldPowerInstant, ScopeId: scope}, {FieldId: fieldPowerAverage, ScopeId: scope}, {FieldId: fieldEnergy}}
			ret := d.h.GetFieldValues(buf)
			if ret == nvml.ERROR_GPU_IS_LOST {
				return trace, nvmlErr(i, "probing its power fields", ret)
			}
			if ret != nvml.SUCCESS {
				trace = append(trace, fmt.Sprintf("fields at %s scope: %s", name, nvml.ErrorString(ret)))
				continue
			}
			d.batched = true
			if buf[2].NvmlReturn == uint32(nvml.SUCCESS) {
				d.counter = true
			}
			d.instant = buf[0].NvmlReturn == uint32(nvml.SUCCESS)
			d.average = buf[1].NvmlReturn == uint32(nvml.SUCCESS)
			if d.instant || d.average {
				d.scope = scope
				field := fieldPowerAverage
				if d.instant {
					field = fieldPowerInstant
				}
				trace = append(trace, fmt.Sprintf("power from field %d at %s scope", field, name))
				break
			}
			trace = append(trace, fmt.Sprintf("fields 186/185 at %s scope: %s/%s", name,
				nvml.ErrorString(nvml.Return(buf[0].NvmlReturn)), nvml.ErrorString(nvml.Return(buf[1].NvmlReturn))))
		}
	}
	if d.counter {
		trace = append(trace, "energy counter from field 83")
	} else if haveEnergy {
		_, ret := d.h.GetTotalEnergyConsumption()
		d.counter = ret == nvml.SUCCESS
		if d.counter {
			trace = append(trace, "energy counter from nvmlDeviceGetTotalEnergyConsumption")
		}
	}
	if !d.instant && !d.average {
		d.scope = scopeGPU
		if _, ret := d.h.GetPowerUsage(); ret != nvml.SUCCESS {
			return trace, fmt.Errorf("nvml: GPU %d: it reports no power (field values at GPU and module scope, and nvmlDeviceGetPowerUsage: %s)", i, nvml.ErrorString(ret))
		}
		trace = append(trace, "power from nvmlDeviceGetPowerUsage (GPU scope)")
	}
	return trace, nil
}

func scopeName(scope uint32) string {
	if scope == scopeModule {
		return ScopeModule
	}
	return ScopeGPU
}

// Devices lists the GPUs, those not opened with Err set.
func (b *NVML) Devices() []Device {
	b.infoMu.RLock()
	defer b.infoMu.RUnlock()
	return append([]Device(nil), b.info...)
}

// Versions are the driver, NVML library and CUDA driver versions.
func (b *NVML) Versions() (driver, nvmlVersion, cuda string) { return b.driver, b.version, b.cuda }

func nvmlErr(i int, what string, ret nvml.Return) error {
	if ret == nvml.ERROR_GPU_IS_LOST {
		return fmt.Errorf("nvml: GPU %d: %s: %w", i, what, ErrGPULost)
	}
	return fmt.Errorf("nvml: GPU %d: %s: %s", i, what, nvml.ErrorString(ret))
}

// FieldValue decodes an NVML field value by its ValueType; ok is false
// when the read failed or the type is unknown.
func FieldValue(f nvml.FieldValue) (float64, bool) {
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

// use calls f with GPU i's opened device, b.mu read-held so Close waits
// for it: the one way to a GPU's handle. A GPU that is not open (it
// failed to open and its retry time has not come, or the retry failed), an
// index out of range, or a closed backend is an error and f is not called.
func (b *NVML) use(i int, f func(d *nvmlDevice) error) error {
	b.mu.RLock()
	defer b.mu.RUnlock()
	d, err := b.device(i)
	if err != nil {
		return err
	}
	return f(d)
}

// device returns GPU i's opened device, opening it again first when it
// failed to open and its retry time came. Called with b.mu read-held.
func (b *NVML) device(i int) (*nvmlDevice, error) {
	if b.closed {
		return nil, errors.New("nvml: backend closed")
	}
	if i < 0 || i >= len(b.slots) {
		return nil, fmt.Errorf("nvml: no GPU %d", i)
	}
	sl := b.slots[i]
	if d := sl.dev.Load(); d != nil {
		return d, nil
	}
	sl.mu.Lock()
	defer sl.mu.Unlock()
	if d := sl.dev.Load(); d != nil {
		return d, nil
	}
	now := b.clock.Now()
	if now.Before(sl.nextRetry) {
		b.infoMu.RLock()
		why := b.info[i].Err
		b.infoMu.RUnlock()
		return nil, fmt.Errorf("nvml: GPU %d not opened (%s); next try at %s", i, why, sl.nextRetry.Format(time.RFC3339))
	}
	info, dev, err := b.openDevice(i)
	if err != nil {
		sl.retryWait = min(2*sl.retryWait, max(maxRetryWait, b.opts.RetryInterval))
		sl.nextRetry = now.Add(sl.retryWait)
		return nil, fmt.Errorf("nvml: GPU %d still not opened: %w", i, err)
	}
	b.infoMu.Lock()
	b.info[i] = info
	b.infoMu.Unlock()
	sl.dev.Store(dev) // published whole: readers see the handle and the probe
	if b.opts.Logger != nil {
		b.opts.Logger.Info("GPU opened after failing at start", "gpu", i, "uuid", info.UUID)
	}
	return dev, nil
}

// Sample reads GPU i's power and energy counter: one batched GetFieldValues
// for instant power (or, without it, average power) and the energy
// counter, each field's own return code checked, with
// nvmlDeviceGetPowerUsage and nvmlDeviceGetTotalEnergyConsumption as
// fallbacks. The sample is stamped at the midpoint of the NVML calls.
func (b *NVML) Sample(i int) (Sample, error) {
	var s Sample
	err := b.use(i, func(d *nvmlDevice) (err error) {
		s, err = b.sample(i, d)
		return err
	})
	return s, err
}

// sample is Sample on the opened device d.
func (b *NVML) sample(i int, d *nvmlDevice) (Sample, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	var s Sample
	power, energy := math.NaN(), math.NaN()
	began := b.clock.Now()
	if d.batched {
		pf := uint32(fieldPowerInstant)
		if !d.instant {
			pf = fieldPowerAverage
		}
		d.fieldBuf = [2]nvml.FieldValue{{FieldId: pf, ScopeId: d.scope}, {FieldId: fieldEnergy}}
		switch ret := d.h.GetFieldValues(d.fieldBuf[:]); ret {
		case nvml.SUCCESS:
			if v, ok := FieldValue(d.fieldBuf[0]); ok {
				power = v / 1000
			}
			if v, ok := FieldValue(d.fieldBuf[1]); ok {
				energy = v / 1000
			}
		case nvml.ERROR_GPU_IS_LOST:
			return s, nvmlErr(i, "reading power fields", ret)
		}
	}
	if math.IsNaN(power) {
		mw, ret := d.h.GetPowerUsage()
		if ret != nvml.SUCCESS {
			return s, nvmlErr(i, "reading power", ret)
		}
		power = float64(mw) / 1000
		if d.batched {
			s.PowerSource = d.usage // the field failed: this reading is another source's
		}
	}
	if d.counter && math.IsNaN(energy) {
		mj, ret := d.h.GetTotalEnergyConsumption()
		if ret == nvml.SUCCESS {
			energy = float64(mj) / 1000
		} else if ret == nvml.ERROR_GPU_IS_LOST {
			return s, nvmlErr(i, "reading the energy counter", ret)
		}
	}
	ended := b.clock.Now()
	s.Time = began.Add(ended.Sub(began) / 2)
	s.PowerWatts = power
	if d.counter && !math.IsNaN(energy) {
		s.EnergyJoules, s.HasEnergy = energy, true
	}
	return s, nil
}

// SlowSample reads memory, utilization, temperature, enforced power limit,
// SM clock, clock-event reasons, compute processes and the 1 s average
// power (field 185) of GPU i. Values the GPU does not give are NaN; a lost
// GPU is an error.
func (b *NVML) SlowSample(i int) (SlowSample, error) {
	var s SlowSample
	err := b.use(i, func(d *nvmlDevice) (err error) {
		s, err = b.slowSample(i, d)
		return err
	})
	return s, err
}

// slowSample is SlowSample on the opened device d.
func (b *NVML) slowSample(i int, d *nvmlDevice) (SlowSample, error) {
	h := d.h
	nan := math.NaN()
	s := SlowSample{MemoryUsedBytes: nan, UtilizationRatio: nan, TemperatureCelsius: nan, PowerLimitWatts: nan, SMClockHertz: nan, AvgPowerWatts: nan, ComputeProcesses: -1}
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
	switch {
	case b.syms[symClocksEventReasons]:
		if r, ret := h.GetCurrentClocksEventReasons(); ok(ret) {
			s.ClockEventReasons, s.HasClockEvents = r, true
		}
	case b.syms[symClocksThrottleReasons]:
		if r, ret := h.GetCurrentClocksThrottleReasons(); ok(ret) {
			s.ClockEventReasons, s.HasClockEvents = r, true
		}
	}
	if pids, ret := b.computePIDs(h); ok(ret) {
		s.ComputePIDs, s.ComputeProcesses = pids, len(pids)
	}
	if d.average && d.batched {
		fv := []nvml.FieldValue{{FieldId: fieldPowerAverage, ScopeId: d.scope}}
		if ok(h.GetFieldValues(fv)) {
			if v, good := FieldValue(fv[0]); good {
				s.AvgPowerWatts = v / 1000
			}
		}
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
