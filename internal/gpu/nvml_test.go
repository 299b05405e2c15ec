//go:build cgo

package gpu

import (
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"

	"github.com/joulemark/joulemark/internal/nvmlmock"
)

// mockGPU is what a test makes a mocked GPU answer.
type mockGPU struct {
	instantMW, averageMW  uint32
	energyMJ              uint64
	fieldsRet             nvml.Return // GetFieldValues' own return
	instantRet, energyRet nvml.Return // per-field returns
	powerUsageCalls       int
	energyCalls           int
}

// mockServer is the DGX H100 mock whose power functions answer from gpus.
func mockServer(gpus []*mockGPU) *server.Server {
	s := nvmlmock.New()
	for i := range s.Devices {
		dev := nvmlmock.Device(s, i)
		g := gpus[i]
		dev.GetFieldValuesFunc = func(fv []nvml.FieldValue) nvml.Return {
			if g.fieldsRet != nvml.SUCCESS {
				return g.fieldsRet
			}
			for k := range fv {
				switch fv[k].FieldId {
				case nvml.FI_DEV_POWER_INSTANT:
					nvmlmock.SetField(&fv[k], g.instantRet, nvml.VALUE_TYPE_UNSIGNED_INT, uint64(g.instantMW))
				case nvml.FI_DEV_POWER_AVERAGE:
					nvmlmock.SetField(&fv[k], nvml.SUCCESS, nvml.VALUE_TYPE_UNSIGNED_INT, uint64(g.averageMW))
				case nvml.FI_DEV_TOTAL_ENERGY_CONSUMPTION:
					nvmlmock.SetField(&fv[k], g.energyRet, nvml.VALUE_TYPE_UNSIGNED_LONG_LONG, g.energyMJ)
				default:
					fv[k].NvmlReturn = uint32(nvml.ERROR_NOT_SUPPORTED)
				}
			}
			return nvml.SUCCESS
		}
		dev.GetPowerUsageFunc = func() (uint32, nvml.Return) {
			g.powerUsageCalls++
			if g.fieldsRet == nvml.ERROR_GPU_IS_LOST {
				return 0, nvml.ERROR_GPU_IS_LOST
			}
			return g.averageMW, nvml.SUCCESS
		}
		dev.GetTotalEnergyConsumptionFunc = func() (uint64, nvml.Return) {
			g.energyCalls++
			if g.energyRet != nvml.SUCCESS && g.fieldsRet == nvml.SUCCESS {
				return 0, g.energyRet
			}
			return g.energyMJ, nvml.SUCCESS
		}
	}
	return s
}

func healthyGPUs(n int) []*mockGPU {
	out := make([]*mockGPU, n)
	for i := range out {
		out[i] = &mockGPU{instantMW: 100000 + uint32(i)*1000, averageMW: 90000, energyMJ: 5_000_000}
	}
	return out
}

func TestNVMLBatchedFields(t *testing.T) {
	gpus := healthyGPUs(8)
	b, err := NewNVML(mockServer(gpus), NVMLOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	devs := b.Devices()
	if len(devs) != 8 || devs[0].Name != "NVIDIA H100 80GB HBM3" || devs[0].DriverVersion != "550.54.15" {
		t.Fatalf("devices %+v", devs[0])
	}
	if devs[0].PowerSource != PowerInstant || devs[0].EnergySource != EnergyCounter {
		t.Errorf("sources %s/%s, want instant/counter", devs[0].PowerSource, devs[0].EnergySource)
	}
	s, err := b.Sample(3)
	if err != nil {
		t.Fatal(err)
	}
	if s.PowerWatts != 103 || !s.HasEnergy || s.EnergyJoules != 5000 {
		t.Errorf("sample %+v, want 103 W instant, 5000 J", s)
	}
	if gpus[3].powerUsageCalls != 0 || gpus[3].energyCalls != 0 {
		t.Errorf("fallbacks called (%d power, %d energy) though the batched fields answered", gpus[3].powerUsageCalls, gpus[3].energyCalls)
	}
	slow, err := b.SlowSample(2)
	if err != nil {
		t.Fatal(err)
	}
	want := SlowSample{MemoryUsedBytes: 3 << 30, UtilizationRatio: 0.2, TemperatureCelsius: 32, PowerLimitWatts: 700,
		SMClockHertz: 1980e6, ClockEventReasons: 5, HasClockEvents: true, ComputeProcesses: 0, ComputePIDs: []uint32{}, AvgPowerWatts: 90}
	if !reflect.DeepEqual(slow, want) {
		t.Errorf("slow sample %+v, want %+v", slow, want)
	}
}

func TestNVMLFallbacks(t *testing.T) {
	for _, tc := range []struct {
		name         string
		gpu          mockGPU
		power        string
		energy       string
		watts        float64
		wantPowerUse bool
	}{
		{"no instant field (pre-Ampere)", mockGPU{averageMW: 250000, energyMJ: 7000, instantRet: nvml.ERROR_NOT_SUPPORTED}, PowerAverage, EnergyCounter, 250, false},
		{"no batched call", mockGPU{averageMW: 250000, energyMJ: 7000, fieldsRet: nvml.ERROR_FUNCTION_NOT_FOUND}, PowerAverage, EnergyCounter, 250, true},
		{"no energy counter (pre-Volta)", mockGPU{instantMW: 120000, averageMW: 1, energyRet: nvml.ERROR_NOT_SUPPORTED}, PowerInstant, EnergyIntegrated, 120, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gpus := healthyGPUs(8)
			g := tc.gpu
			gpus[0] = &g
			b, err := NewNVML(mockServer(gpus), NVMLOptions{MaxGPUs: 2})
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			if n := len(b.Devices()); n != 2 {
				t.Errorf("MaxGPUs 2 gave %d GPUs", n)
			}
			d := b.Devices()[0]
			if d.PowerSource != tc.power || d.EnergySource != tc.energy {
				t.Errorf("sources %s/%s, want %s/%s", d.PowerSource, d.EnergySource, tc.power, tc.energy)
			}
			g.powerUsageCalls = 0
			s, err := b.Sample(0)
			if err != nil {
				t.Fatal(err)
			}
			if s.PowerWatts != tc.watts {
				t.Errorf("power %v W, want %v", s.PowerWatts, tc.watts)
			}
			if (g.powerUsageCalls > 0) != tc.wantPowerUse {
				t.Errorf("GetPowerUsage called %d times", g.powerUsageCalls)
			}
			if tc.energy == EnergyCounter && (!s.HasEnergy || s.EnergyJoules != 7) {
				t.Errorf("energy %+v, want the counter's 7 J", s)
			}
			if tc.energy == EnergyIntegrated && s.HasEnergy {
				t.Errorf("energy reported for a GPU without counter")
			}
		})
	}
}

func TestNVMLLostGPU(t *testing.T) {
	gpus := healthyGPUs(8)
	b, err := NewNVML(mockServer(gpus), NVMLOptions{})
	if err != nil {
		t.Fatal(err)
	}
	gpus[5].fieldsRet = nvml.ERROR_GPU_IS_LOST
	if _, err := b.Sample(5); !errors.Is(err, ErrGPULost) {
		t.Errorf("lost GPU: %v, want ErrGPULost", err)
	}
	if _, err := b.Sample(4); err != nil {
		t.Errorf("GPU 4 after GPU 5 was lost: %v", err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Sample(4); err == nil {
		t.Error("Sample after Close reached the library")
	}
}

func TestNVMLInitFailures(t *testing.T) {
	for _, tc := range []struct {
		ret  nvml.Return
		want string
	}{
		{nvml.ERROR_LIBRARY_NOT_FOUND, "--gpu=sim"},
		{nvml.ERROR_DRIVER_NOT_LOADED, "--gpu=sim"},
	} {
		calls := 0
		lib := &mock.Interface{
			InitFunc: func() nvml.Return { return tc.ret },
			// any other call after a failed Init would kill a real process
			DeviceGetCountFunc: func() (int, nvml.Return) { calls++; return 0, nvml.SUCCESS },
			ShutdownFunc:       func() nvml.Return { calls++; return nvml.SUCCESS },
		}
		_, err := NewNVML(lib, NVMLOptions{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("init %v: error %v, want one naming %s", tc.ret, err, tc.want)
		}
		if calls != 0 {
			t.Errorf("init %v: %d NVML calls after a failed Init", tc.ret, calls)
		}
	}
}

func TestFieldValueDecoding(t *testing.T) {
	for _, tc := range []struct {
		vt   nvml.ValueType
		bits uint64
		want float64
	}{
		{nvml.VALUE_TYPE_DOUBLE, math.Float64bits(12.5), 12.5},
		{nvml.VALUE_TYPE_UNSIGNED_INT, 700000, 700000},
		{nvml.VALUE_TYPE_UNSIGNED_LONG_LONG, 1 << 40, 1 << 40},
		{nvml.VALUE_TYPE_SIGNED_LONG_LONG, uint64(1<<64 - 5), -5},
		{nvml.VALUE_TYPE_SIGNED_INT, uint64(uint32(1<<32 - 3)), -3},
		{nvml.VALUE_TYPE_UNSIGNED_SHORT, 65535, 65535},
	} {
		var f nvml.FieldValue
		nvmlmock.SetField(&f, nvml.SUCCESS, tc.vt, tc.bits)
		if got, ok := FieldValue(f); !ok || got != tc.want {
			t.Errorf("type %d: %v %v, want %v", tc.vt, got, ok, tc.want)
		}
	}
	var f nvml.FieldValue
	nvmlmock.SetField(&f, nvml.ERROR_NOT_SUPPORTED, nvml.VALUE_TYPE_UNSIGNED_INT, 1)
	if _, ok := FieldValue(f); ok {
		t.Error("a field with its own error decoded")
	}
}

// BenchmarkNVMLMockSample is the exporter-side cost of one NVML sample
// (batched field values, decoding, checks) against go-nvml's mock; the
// driver's own time is not in it.
func BenchmarkNVMLMockSample(b *testing.B) {
	nv, err := NewNVML(mockServer(healthyGPUs(8)), NVMLOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer nv.Close()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if _, err := nv.Sample(i % 8); err != nil {
			b.Fatal(err)
		}
	}
}

// TestNVMLTransientFieldFailureLabelsItsSource: field 186 fails on one read
// after the probe found it; that read falls back to GetPowerUsage (a 1 s
// average on Hopper) and says so in Sample.PowerSource; the next good read
// is the device's instant power again.
func TestNVMLTransientFieldFailureLabelsItsSource(t *testing.T) {
	gpus := healthyGPUs(8)
	b, err := NewNVML(mockServer(gpus), NVMLOptions{MaxGPUs: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if d := b.Devices()[0]; d.PowerSource != PowerInstant {
		t.Fatalf("power source %s, want instant", d.PowerSource)
	}
	gpus[0].instantRet = nvml.ERROR_UNKNOWN
	s, err := b.Sample(0)
	if err != nil {
		t.Fatal(err)
	}
	if s.PowerWatts != 90 || s.PowerSource != PowerAverage {
		t.Errorf("fallback read %v W labelled %q, want 90 W labelled average", s.PowerWatts, s.PowerSource)
	}
	gpus[0].instantRet = nvml.SUCCESS
	if s, _ := b.Sample(0); s.PowerWatts != 100 || s.PowerSource != "" {
		t.Errorf("good read %v W labelled %q, want 100 W of the device's source", s.PowerWatts, s.PowerSource)
	}
}
