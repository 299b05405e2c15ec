//go:build cgo

package gpu

import (
	"bytes"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/joulemark/joulemark/internal/nvmlmock"
	"github.com/joulemark/joulemark/internal/testkit/fakeclock"
)

// TestDoctorNVMLMock: the doctor on a GH200-like mock (power only at module
// scope), an old driver without the clocks-event call, MIG on GPU 1, and
// process queries refused on GPU 0; the counter updates every 100 ms of the
// fake clock.
func TestDoctorNVMLMock(t *testing.T) {
	clk := fakeclock.New()
	s, ms := powered(t, 1)
	t0 := clk.Now()
	for i := range s.Devices {
		nvmlmock.Device(s, i).Config.Name = "NVIDIA GH200 480GB"
		ms[i].Energy = func() uint64 { // 300 W, updated every 100 ms
			k := clk.Now().Sub(t0) / (100 * time.Millisecond)
			return uint64(k) * 30_000
		}
	}
	nvmlmock.Missing(s, "nvmlDeviceGetCurrentClocksEventReasons")
	nvmlmock.Device(s, 0).GetComputeRunningProcessesFunc = func() ([]nvml.ProcessInfo, nvml.Return) { return nil, nvml.ERROR_NO_PERMISSION }
	if _, ret := nvmlmock.Device(s, 1).SetMigMode(nvml.DEVICE_MIG_ENABLE); ret != nvml.SUCCESS {
		t.Fatal(ret)
	}
	b, err := NewNVML(s, NVMLOptions{MaxGPUs: 2, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	r := Doctor(b, DoctorOptions{Duration: 3 * time.Second, Clock: clk, Sleep: clk.Advance})
	if r.Backend != "nvml" || r.DriverVersion != "550.54.15" || r.NVMLVersion == "" || r.Verdict != VerdictWarn {
		t.Errorf("report header %+v", r)
	}
	verdicts := func(g DoctorGPU) map[string]string {
		m := map[string]string{}
		for _, c := range g.Checks {
			m[c.Name] = c.Verdict
		}
		return m
	}
	g0, g1 := r.GPUs[0], r.GPUs[1]
	v0, v1 := verdicts(g0), verdicts(g1)
	if v0["scope"] != VerdictWarn || v0["process_query"] != VerdictWarn || v1["process_query"] != VerdictOK ||
		v0["mig"] != VerdictOK || v1["mig"] != VerdictWarn || v0["clock_events"] != VerdictInfo || v0["counter_period"] != VerdictOK {
		t.Errorf("checks gpu0 %v gpu1 %v", v0, v1)
	}
	if g0.Counter == nil || math.Abs(g0.Counter.PeriodSeconds-0.1) > 0.003 || g0.Counter.JitterSeconds > 0.002 {
		t.Errorf("counter %+v, want 100 ms without jitter", g0.Counter)
	}
	supported := map[string]bool{}
	for _, f := range g0.Fields {
		supported[f.Name+"@"+f.Scope] = f.Supported
	}
	if supported["power_instant (186)@gpu"] || !supported["power_instant (186)@module"] || !supported["total_energy_consumption (83)@"] {
		t.Errorf("fields %v", supported)
	}
	if g0.Readings.InstantWatts == nil || *g0.Readings.InstantWatts != 300 || g0.Readings.PowerUsageWatts == nil {
		t.Errorf("readings %+v", g0.Readings)
	}
	var text bytes.Buffer
	_ = r.WriteText(&text)
	for _, want := range []string{"Grace CPU", "run the exporter as a user that can query processes", "nvmlDeviceGetCurrentClocksThrottleReasons", "scope module"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, text.String())
		}
	}
}

// TestDoctorPowerUsageScope: on a GPU answering field 185 at both scopes,
// the doctor tells which one nvmlDeviceGetPowerUsage reads (the exporter's
// fallback takes it as GPU scope); on a GPU answering one scope it cannot.
func TestDoctorPowerUsageScope(t *testing.T) {
	for _, tc := range []struct {
		name    string
		scopes  []uint32
		usageMW uint32 // 0: the mock's (GPU-scope average, 95 W)
		want    string // verdict, "" for no check
	}{
		{"GetPowerUsage reads the GPU", []uint32{0, 1}, 0, VerdictOK},
		{"GetPowerUsage reads the module", []uint32{0, 1}, 290_000, VerdictWarn},
		{"one scope only", []uint32{1}, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := fakeclock.New()
			s, _ := powered(t, tc.scopes...)
			if tc.usageMW != 0 {
				nvmlmock.Device(s, 0).GetPowerUsageFunc = func() (uint32, nvml.Return) { return tc.usageMW, nvml.SUCCESS }
			}
			b, err := NewNVML(s, NVMLOptions{MaxGPUs: 1, Clock: clk})
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			r := Doctor(b, DoctorOptions{Duration: time.Second, Clock: clk, Sleep: clk.Advance})
			got := ""
			for _, c := range r.GPUs[0].Checks {
				if c.Name == "power_usage_scope" {
					got = c.Verdict
				}
			}
			if got != tc.want {
				t.Errorf("power_usage_scope verdict %q, want %q (checks %+v)", got, tc.want, r.GPUs[0].Checks)
			}
		})
	}
}
