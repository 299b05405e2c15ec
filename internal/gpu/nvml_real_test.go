//go:build cgo

package gpu

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"

	"github.com/joulemark/joulemark/internal/nvmlmock"
	"github.com/joulemark/joulemark/internal/testkit/fakeclock"
)

// What real GPUs do that the DGX H100 mock did not: module scope, missing
// symbols, failed counter reads, GPUs lost at start, hung calls.

// powered is the mock with every GPU modelled: instant and average power at
// the given scopes, and a counter.
func powered(t *testing.T, scopes ...uint32) (*server.Server, []*nvmlmock.PowerModel) {
	t.Helper()
	s := nvmlmock.New()
	var ms []*nvmlmock.PowerModel
	for i := range s.Devices {
		m := &nvmlmock.PowerModel{InstantMW: map[uint32]uint32{}, AverageMW: map[uint32]uint32{}, Energy: func() uint64 { return 9_000_000 }}
		for _, sc := range scopes {
			m.InstantMW[sc], m.AverageMW[sc] = 100_000+uint32(sc)*200_000, 95_000+uint32(sc)*200_000
		}
		ms = append(ms, nvmlmock.Power(s, i, m))
	}
	return s, ms
}

func TestNVMLScopes(t *testing.T) {
	for _, tc := range []struct {
		name                string
		scopes              []uint32
		gpuName             string
		power, energy       string // scopes
		powerW              float64
		energySource        string
		wantCounterSampling bool
	}{
		{"H100: GPU scope", []uint32{0}, "", ScopeGPU, ScopeGPU, 100, EnergyCounter, true},
		// GH200: GPU scope unsupported, the counter covers the module
		{"GH200: module only", []uint32{1}, "NVIDIA GH200 480GB", ScopeModule, ScopeModule, 300, EnergyCounter, true},
		// a superchip answering GPU-scope power: its counter is module-wide,
		// so energy is integrated from GPU-scope power instead of mixing
		{"GH200: GPU-scope power, module counter", []uint32{0, 1}, "NVIDIA GH200 480GB", ScopeGPU, ScopeGPU, 100, EnergyIntegrated, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := powered(t, tc.scopes...)
			if tc.gpuName != "" {
				for i := range s.Devices {
					nvmlmock.Device(s, i).Config.Name = tc.gpuName
				}
			}
			b, err := NewNVML(s, NVMLOptions{MaxGPUs: 1})
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			d := b.Devices()[0]
			if d.PowerScope != tc.power || d.EnergyScope != tc.energy || d.EnergySource != tc.energySource {
				t.Errorf("scopes power %s energy %s, source %s; want %s %s %s", d.PowerScope, d.EnergyScope, d.EnergySource, tc.power, tc.energy, tc.energySource)
			}
			if d.PowerScope != d.EnergyScope {
				t.Errorf("power scope %s and energy scope %s mixed", d.PowerScope, d.EnergyScope)
			}
			smp, err := b.Sample(0)
			if err != nil {
				t.Fatal(err)
			}
			if smp.PowerWatts != tc.powerW || smp.HasEnergy != tc.wantCounterSampling {
				t.Errorf("sample %+v, want %v W, counter %v", smp, tc.powerW, tc.wantCounterSampling)
			}
		})
	}
}

// TestNVMLProbeOrder walks the probe order (fields at GPU scope, at module
// scope, nvmlDeviceGetPowerUsage; counter from field 83, from
// nvmlDeviceGetTotalEnergyConsumption, else integrated) on GPU-scope-
// unsupported devices, and checks on every case that power is read at the
// scope it is labelled with and that a counter is used only when its scope
// is the power's. GPU-scope power is 100 W instant / 95 W average, module
// scope 300 / 295 W; nvmlDeviceGetPowerUsage answers the GPU-scope average.
func TestNVMLProbeOrder(t *testing.T) {
	for _, tc := range []struct {
		name        string
		scopes      []uint32 // scopes the power fields answer at
		gpuName     string
		c2c         bool     // nvmlDeviceGetC2cModeInfoV present, C2C on
		gpuCallFail bool     // GetFieldValues fails as a whole for a GPU-scope request
		missing     []string // calls the driver lacks
		noCounter   bool
		power       string  // scope
		powerW      float64 // what Sample reads
		source      string  // power source
		energy      string  // energy source
	}{
		{name: "H100", scopes: []uint32{0}, power: ScopeGPU, powerW: 100, source: PowerInstant, energy: EnergyCounter},
		{name: "GH200, GPU scope unsupported", scopes: []uint32{1}, gpuName: "NVIDIA GH200 480GB",
			power: ScopeModule, powerW: 300, source: PowerInstant, energy: EnergyCounter},
		// the GPU-scope call failing as a whole still leads to module scope
		{name: "GH200, GPU-scope call fails", scopes: []uint32{1}, gpuName: "NVIDIA GH200 480GB", gpuCallFail: true,
			power: ScopeModule, powerW: 300, source: PowerInstant, energy: EnergyCounter},
		{name: "GH200 with GPU-scope power: module counter unused", scopes: []uint32{0, 1}, gpuName: "NVIDIA GH200 480GB",
			power: ScopeGPU, powerW: 100, source: PowerInstant, energy: EnergyIntegrated},
		// C2C mode read from the driver, whatever the name says
		{name: "C2C on, GPU-scope power: module counter unused", scopes: []uint32{0, 1}, c2c: true,
			power: ScopeGPU, powerW: 100, source: PowerInstant, energy: EnergyIntegrated},
		{name: "C2C on, module scope only", scopes: []uint32{1}, c2c: true,
			power: ScopeModule, powerW: 300, source: PowerInstant, energy: EnergyCounter},
		// no field values (an old driver): GetPowerUsage is GPU scope, so a
		// superchip's module counter is not used
		{name: "GH200 without field values", scopes: []uint32{0, 1}, gpuName: "NVIDIA GH200 480GB", missing: []string{"nvmlDeviceGetFieldValues"},
			power: ScopeGPU, powerW: 95, source: PowerAverage, energy: EnergyIntegrated},
		{name: "H100 without field values", scopes: []uint32{0}, missing: []string{"nvmlDeviceGetFieldValues"},
			power: ScopeGPU, powerW: 95, source: PowerAverage, energy: EnergyCounter},
		{name: "H100 without a counter", scopes: []uint32{0}, noCounter: true,
			power: ScopeGPU, powerW: 100, source: PowerInstant, energy: EnergyIntegrated},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, ms := powered(t, tc.scopes...)
			dev := nvmlmock.Device(s, 0)
			if tc.gpuName != "" {
				dev.Config.Name = tc.gpuName
			}
			if tc.noCounter {
				ms[0].Energy = nil
			}
			if tc.gpuCallFail {
				fields := dev.GetFieldValuesFunc
				dev.GetFieldValuesFunc = func(fv []nvml.FieldValue) nvml.Return {
					for _, f := range fv {
						if f.FieldId != nvml.FI_DEV_TOTAL_ENERGY_CONSUMPTION && f.ScopeId == scopeGPU {
							return nvml.ERROR_NOT_SUPPORTED
						}
					}
					return fields(fv)
				}
			}
			nvmlmock.Missing(s, tc.missing...)
			if tc.c2c {
				lookup := s.LookupSymbolFunc
				s.LookupSymbolFunc = func(name string) error {
					if name == symC2cModeInfo {
						return nil
					}
					return lookup(name)
				}
				old := c2cMode
				c2cMode = func(nvml.Device) (bool, nvml.Return) { return true, nvml.SUCCESS }
				defer func() { c2cMode = old }()
			}
			b, err := NewNVML(s, NVMLOptions{MaxGPUs: 1})
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			d := b.Devices()[0]
			if d.PowerScope != tc.power || d.PowerSource != tc.source || d.EnergySource != tc.energy {
				t.Errorf("power %s scope from %s, energy %s; want %s from %s, %s", d.PowerScope, d.PowerSource, d.EnergySource, tc.power, tc.source, tc.energy)
			}
			if d.EnergyScope != d.PowerScope {
				t.Errorf("scopes mixed: power %s, energy %s", d.PowerScope, d.EnergyScope)
			}
			smp, err := b.Sample(0)
			if err != nil {
				t.Fatal(err)
			}
			if smp.PowerWatts != tc.powerW {
				t.Errorf("read %v W, want %v W (%s scope)", smp.PowerWatts, tc.powerW, tc.power)
			}
			if smp.HasEnergy != (tc.energy == EnergyCounter) {
				t.Errorf("sample has a counter reading %v, energy source %s", smp.HasEnergy, d.EnergySource)
			}
		})
	}
}

func TestNVMLIdentityLabels(t *testing.T) {
	s, _ := powered(t, 0)
	if _, ret := nvmlmock.Device(s, 1).SetMigMode(nvml.DEVICE_MIG_ENABLE); ret != nvml.SUCCESS {
		t.Fatal(ret)
	}
	b, err := NewNVML(s, NVMLOptions{MaxGPUs: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	d := b.Devices()
	if d[0].PCIBusID != nvmlmock.PCIBusID(0) || d[0].MIGMode != MIGDisabled || d[1].MIGMode != MIGEnabled || d[0].Architecture != "hopper" {
		t.Errorf("identity %+v / %+v", d[0], d[1])
	}
}

func TestPowerUsageSourcePerArchitecture(t *testing.T) {
	for _, tc := range []struct {
		arch nvml.DeviceArchitecture
		name string
		pci  uint32 // nvmlPciInfo_t.pciDeviceId, 0: unknown
		want string
	}{
		{nvml.DEVICE_ARCH_VOLTA, "Tesla V100-SXM2-32GB", 0, PowerInstant},
		{nvml.DEVICE_ARCH_AMPERE, "NVIDIA A100-SXM4-80GB", 0, PowerInstant}, // GA100
		{nvml.DEVICE_ARCH_AMPERE, "NVIDIA A30", 0, PowerInstant},            // GA100
		{nvml.DEVICE_ARCH_AMPERE, "NVIDIA A10", 0, PowerAverage},            // GA102
		{nvml.DEVICE_ARCH_AMPERE, "NVIDIA RTX A1000", 0, PowerAverage},      // GA107: "A100" in its name
		{nvml.DEVICE_ARCH_AMPERE, "NVIDIA RTX A3000 Laptop GPU", 0, PowerAverage},
		{nvml.DEVICE_ARCH_AMPERE, "NVIDIA A100 80GB PCIe", 0x20b510de, PowerInstant},
		{nvml.DEVICE_ARCH_AMPERE, "a renamed board", 0x20f310de, PowerInstant},       // A800 by its device id
		{nvml.DEVICE_ARCH_AMPERE, "NVIDIA A100-SXM4-80GB", 0x25b010de, PowerAverage}, // the id wins over the name
		{nvml.DEVICE_ARCH_HOPPER, "NVIDIA H200", 0x233510de, PowerAverage},
	} {
		if got := powerUsageSource(tc.arch, tc.name, tc.pci); got != tc.want {
			t.Errorf("%s (%#x): %s, want %s", tc.name, tc.pci, got, tc.want)
		}
	}
	// without the field API the exporter falls back to GetPowerUsage and
	// labels it per architecture
	s, _ := powered(t, 0)
	nvmlmock.Missing(s, "nvmlDeviceGetFieldValues")
	for i := range s.Devices {
		nvmlmock.Device(s, i).Config.Architecture = nvml.DEVICE_ARCH_VOLTA
	}
	b, err := NewNVML(s, NVMLOptions{MaxGPUs: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if d := b.Devices()[0]; d.PowerSource != PowerInstant || d.EnergySource != EnergyCounter {
		t.Errorf("Volta through GetPowerUsage: %s/%s, want instant/counter", d.PowerSource, d.EnergySource)
	}
}

// TestNVMLOldDriverMissingSymbols: on a driver before R535
// nvmlDeviceGetCurrentClocksEventReasons does not exist; calling it would
// kill the process (the mock panics). The older name answers instead.
func TestNVMLOldDriverMissingSymbols(t *testing.T) {
	s, _ := powered(t, 0)
	nvmlmock.Missing(s, "nvmlDeviceGetCurrentClocksEventReasons")
	b, err := NewNVML(s, NVMLOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	slow, err := b.SlowSample(0)
	if err != nil {
		t.Fatal(err)
	}
	if !slow.HasClockEvents || slow.ClockEventReasons != 5 {
		t.Errorf("clock events %+v, want 0x5 through GetCurrentClocksThrottleReasons", slow)
	}
	// neither name: the metric is omitted, nothing dies
	nvmlmock.Missing(s, "nvmlDeviceGetCurrentClocksThrottleReasons", "nvmlDeviceGetMigMode", "nvmlDeviceGetArchitecture", "nvmlDeviceGetTotalEnergyConsumption")
	b2, err := NewNVML(s, NVMLOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer b2.Close()
	if slow, err := b2.SlowSample(0); err != nil || slow.HasClockEvents {
		t.Errorf("slow %+v %v, want no clock events and no error", slow, err)
	}
	if d := b2.Devices()[0]; d.MIGMode != MIGUnsupported || d.Architecture != "unknown" {
		t.Errorf("device %+v", d)
	}
}

// TestNVMLFailedCounterRead: a counter read that fails while power answers
// yields a sample without energy (the exporter integrates that interval).
func TestNVMLFailedCounterRead(t *testing.T) {
	s, ms := powered(t, 0)
	b, err := NewNVML(s, NVMLOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ms[2].Lock()
	ms[2].EnergyFails = 2 // the batched field and the fallback call
	ms[2].Unlock()
	smp, err := b.Sample(2)
	if err != nil || smp.HasEnergy || smp.PowerWatts != 100 {
		t.Errorf("sample %+v %v, want power without energy", smp, err)
	}
	if smp, _ := b.Sample(2); !smp.HasEnergy {
		t.Errorf("the counter did not come back: %+v", smp)
	}
}

// TestNVMLLostGPUAtStart: a GPU failing at start is listed down (Err), the
// others work, and it is opened on a later read once its retry time came.
func TestNVMLLostGPUAtStart(t *testing.T) {
	s, _ := powered(t, 0)
	lost := true
	getHandle := s.DeviceGetHandleByIndexFunc
	s.DeviceGetHandleByIndexFunc = func(i int) (nvml.Device, nvml.Return) {
		if i == 3 && lost {
			return nil, nvml.ERROR_GPU_IS_LOST
		}
		return getHandle(i)
	}
	clk := fakeclock.New()
	b, err := NewNVML(s, NVMLOptions{Clock: clk, RetryInterval: 10 * time.Second})
	if err != nil {
		t.Fatalf("one lost GPU failed the backend: %v", err)
	}
	defer b.Close()
	d := b.Devices()
	if len(d) != 8 || d[3].Err == "" || d[3].UUID != "" || d[2].Err != "" {
		t.Fatalf("devices %+v", d[2:4])
	}
	if _, err := b.Sample(3); err == nil {
		t.Error("a GPU that is not open sampled")
	}
	// Every per-GPU call goes through the open check: none reaches a nil handle.
	if _, err := b.MIGInstances(3); err == nil {
		t.Error("MIGInstances of a GPU that is not open answered")
	}
	if _, err := b.ProcessSM(3); err == nil {
		t.Error("ProcessSM of a GPU that is not open answered")
	}
	if _, err := b.SlowSample(3); err == nil {
		t.Error("SlowSample of a GPU that is not open answered")
	}
	if _, err := b.Sample(4); err != nil {
		t.Errorf("GPU 4: %v", err)
	}
	lost = false
	if _, err := b.Sample(3); err == nil || !strings.Contains(err.Error(), "next try") {
		t.Errorf("GPU 3 retried before its retry time: %v", err)
	}
	clk.Advance(11 * time.Second)
	if _, err := b.Sample(3); err != nil {
		t.Fatalf("GPU 3 after its retry time: %v", err)
	}
	if d := b.Devices()[3]; d.Err != "" || d.UUID != nvmlmock.UUID(3) || d.EnergySource != EnergyCounter {
		t.Errorf("GPU 3 once opened: %+v", d)
	}
}

// TestNVMLRetryInterval: a GPU failing to open is tried again after
// RetryInterval, then after twice as long each time, up to 5 minutes (or
// RetryInterval when longer: --nvml.retry-interval).
func TestNVMLRetryInterval(t *testing.T) {
	for _, tc := range []struct {
		interval time.Duration
		waits    []time.Duration // between attempts, failing each time
	}{
		{3 * time.Second, []time.Duration{3 * time.Second, 6 * time.Second, 12 * time.Second, 24 * time.Second}},
		{2 * time.Minute, []time.Duration{2 * time.Minute, 4 * time.Minute, 5 * time.Minute, 5 * time.Minute}},
		{10 * time.Minute, []time.Duration{10 * time.Minute, 10 * time.Minute, 10 * time.Minute}},
	} {
		t.Run(tc.interval.String(), func(t *testing.T) {
			s, _ := powered(t, 0)
			attempts := 0
			getHandle := s.DeviceGetHandleByIndexFunc
			s.DeviceGetHandleByIndexFunc = func(i int) (nvml.Device, nvml.Return) {
				if i == 1 {
					attempts++
					return nil, nvml.ERROR_GPU_IS_LOST
				}
				return getHandle(i)
			}
			clk := fakeclock.New()
			b, err := NewNVML(s, NVMLOptions{Clock: clk, MaxGPUs: 2, RetryInterval: tc.interval})
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			for k, w := range tc.waits {
				before := attempts
				clk.Advance(w - time.Millisecond)
				_, _ = b.Sample(1)
				if attempts != before {
					t.Fatalf("attempt %d came before its wait of %v", k+2, w)
				}
				clk.Advance(time.Millisecond)
				_, _ = b.Sample(1)
				if attempts != before+1 {
					t.Fatalf("attempt %d did not come after its wait of %v", k+2, w)
				}
			}
		})
	}
}

// TestNVMLNoGPUEverWorks: every GPU failing at start fails the backend
// (after InitTimeout of retries), naming why.
func TestNVMLNoGPUEverWorks(t *testing.T) {
	s, _ := powered(t, 0)
	s.DeviceGetHandleByIndexFunc = func(int) (nvml.Device, nvml.Return) { return nil, nvml.ERROR_GPU_IS_LOST }
	_, err := NewNVML(s, NVMLOptions{InitTimeout: time.Millisecond})
	if err == nil || !errors.Is(err, ErrGPULost) || !strings.Contains(err.Error(), "no GPU could be opened") {
		t.Errorf("error %v", err)
	}
}

// TestNVMLInitRetried: nvmlInit failing while the driver loads is retried
// with backoff until it answers.
func TestNVMLInitRetried(t *testing.T) {
	s, _ := powered(t, 0)
	calls := 0
	s.InitFunc = func() nvml.Return {
		calls++
		if calls < 3 {
			return nvml.ERROR_DRIVER_NOT_LOADED
		}
		return nvml.SUCCESS
	}
	b, err := NewNVML(s, NVMLOptions{InitTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if calls != 3 {
		t.Errorf("nvmlInit called %d times, want 3", calls)
	}
}

// TestNVMLHungCallStallsOnlyItsGPU: a hung call on one GPU does not block
// reads of the others (no backend-wide lock held across a GPU's call).
func TestNVMLHungCallStallsOnlyItsGPU(t *testing.T) {
	s, ms := powered(t, 0)
	b, err := NewNVML(s, NVMLOptions{})
	if err != nil {
		t.Fatal(err)
	}
	hang := make(chan struct{})
	ms[1].Lock()
	ms[1].Hang = hang
	ms[1].Unlock()
	done := make(chan struct{})
	go func() { _, _ = b.Sample(1); close(done) }()
	for range 100 {
		if _, err := b.Sample(0); err != nil {
			t.Fatal(err)
		}
		if _, err := b.SlowSample(2); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-done:
		t.Fatal("the hung call returned")
	default:
	}
	close(hang)
	<-done
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestNVMLMidpointTimestamp: a sample is stamped at the midpoint of its
// calls, not after them.
func TestNVMLMidpointTimestamp(t *testing.T) {
	clk := fakeclock.New()
	s, ms := powered(t, 0)
	ms[0].Energy = func() uint64 { clk.Advance(40 * time.Millisecond); return 1 } // the call takes 40 ms
	b, err := NewNVML(s, NVMLOptions{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	before := clk.Now()
	smp, err := b.Sample(0)
	if err != nil {
		t.Fatal(err)
	}
	if got := smp.Time.Sub(before); got != 20*time.Millisecond {
		t.Errorf("stamped %v after the call began, want 20ms (the midpoint of 40ms)", got)
	}
}

// TestNVMLComputePIDsUnderMPS: under MPS, NVML lists the MPS server among
// the compute processes for as long as the daemon keeps it, and the engine
// as one of its clients. The PIDs leave the server out and take the
// clients in, so the server outliving the engine does not hold a release.
func TestNVMLComputePIDsUnderMPS(t *testing.T) {
	s, _ := powered(t, 0)
	engine := true
	dev := nvmlmock.Device(s, 0)
	dev.GetComputeRunningProcessesFunc = func() ([]nvml.ProcessInfo, nvml.Return) {
		return []nvml.ProcessInfo{{Pid: 10}, {Pid: 30}}, nvml.SUCCESS
	}
	dev.GetMPSComputeRunningProcessesFunc = func() ([]nvml.ProcessInfo, nvml.Return) {
		if !engine {
			return nil, nvml.SUCCESS
		}
		return []nvml.ProcessInfo{{Pid: 20}}, nvml.SUCCESS
	}
	s.SystemGetProcessNameFunc = func(pid int) (string, nvml.Return) {
		switch pid {
		case 10:
			return "/usr/bin/nvidia-cuda-mps-server", nvml.SUCCESS
		case 30:
			return "python3", nvml.SUCCESS
		}
		return "", nvml.ERROR_NOT_FOUND
	}
	b, err := NewNVML(s, NVMLOptions{MaxGPUs: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	for _, tc := range []struct {
		engine bool
		want   []uint32
	}{{true, []uint32{20, 30}}, {false, []uint32{30}}} {
		engine = tc.engine
		slow, err := b.SlowSample(0)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(slow.ComputePIDs, tc.want) || slow.ComputeProcesses != len(tc.want) {
			t.Errorf("engine %v: PIDs %v (%d), want %v", tc.engine, slow.ComputePIDs, slow.ComputeProcesses, tc.want)
		}
	}
}
