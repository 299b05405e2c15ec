//go:build cgo

package exporter

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/joulemark/joulemark/internal/gpu"
	"github.com/joulemark/joulemark/internal/nvmlmock"
	"github.com/joulemark/joulemark/internal/remotewrite"
)

// TestGPULostAtStartIsListedAndRetried: a GPU that fails at start does not
// stop the exporter; it is listed with joulemark_gpu_up 0 and, once it
// opens, sampled with its real identity (its remote-written series too).
func TestGPULostAtStartIsListedAndRetried(t *testing.T) {
	clk := newFakeClock()
	m := newMockNVML()
	lost := true
	getHandle := m.srv.DeviceGetHandleByIndexFunc
	m.srv.DeviceGetHandleByIndexFunc = func(i int) (nvml.Device, nvml.Return) {
		if i == 2 && lost {
			return nil, nvml.ERROR_UNKNOWN
		}
		return getHandle(i)
	}
	b, err := gpu.NewNVML(m.srv, gpu.NVMLOptions{Clock: clk, MaxGPUs: 3, RetryInterval: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	rw := newHTTPServer(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	e, err := newExp(Config{Backend: b, Clock: clk, RemoteWrite: &remotewrite.Config{URL: rw}})
	if err != nil {
		t.Fatalf("one GPU down at start failed the exporter: %v", err)
	}
	defer e.Close()
	step := func(n int) {
		for range n {
			clk.Advance(e.cfg.Interval)
			m.advance(e.cfg.Interval)
			e.SampleOnce()
		}
	}
	e.SampleOnce()
	step(5)
	body := fetchMetricsHandler(t, e)
	for _, want := range []string{`joulemark_gpu_up{gpu="2",uuid=""} 0`, fmt.Sprintf(`joulemark_gpu_up{gpu="1",uuid=%q} 1`, nvmlmock.UUID(1))} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if u := e.gpus[2].rwPower["uuid"]; u != "" {
		t.Errorf("remote-write uuid of the lost GPU %q, want empty", u)
	}
	lost = false
	step(15) // past the 1 s retry
	if u := e.gpus[2].rwEnergy["uuid"]; u != nvmlmock.UUID(2) {
		t.Errorf("remote-write uuid of the GPU once opened %q, want %q", u, nvmlmock.UUID(2))
	}
	body = fetchMetricsHandler(t, e)
	for _, want := range []string{
		fmt.Sprintf(`joulemark_gpu_up{gpu="2",uuid=%q} 1`, nvmlmock.UUID(2)),
		// every read of GPU 1 is timed: 21 passes
		fmt.Sprintf(`joulemark_gpu_sample_duration_seconds_count{gpu="1",uuid=%q} 21`, nvmlmock.UUID(1)),
		fmt.Sprintf(`energy_scope="gpu",energy_source="counter",gpu="2",mig_mode="disabled",name="NVIDIA H100 80GB HBM3",pci_bus_id=%q`, nvmlmock.PCIBusID(2)),
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// TestCloseBehindHungNVMLCall: NVML's shutdown waits for a hung call (the
// backend's Close takes the lock every call holds), so Close gives up on it
// after shutdownTimeout, naming the hung GPU, instead of blocking for good.
func TestCloseBehindHungNVMLCall(t *testing.T) {
	srv := nvmlmock.New()
	var ms []*nvmlmock.PowerModel
	for i := range 3 {
		ms = append(ms, nvmlmock.Power(srv, i, &nvmlmock.PowerModel{
			InstantMW: map[uint32]uint32{0: 100_000}, AverageMW: map[uint32]uint32{0: 100_000},
			Energy: func() uint64 { return 1_000_000 },
		}))
	}
	b, err := gpu.NewNVML(srv, gpu.NVMLOptions{MaxGPUs: 3})
	if err != nil {
		t.Fatal(err)
	}
	e, err := newExp(Config{Backend: b, Interval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	e.Start(t.Context())
	hang := make(chan struct{})
	defer close(hang) // lets the hung call, then the backend's Close, return
	ms[1].Lock()
	ms[1].Hang = hang
	ms[1].Unlock()
	for i := 0; ; i++ {
		if st := e.Stalled(); len(st) == 1 && st[0] == 1 {
			break
		}
		if i > 1000 {
			t.Fatalf("GPU 1 never stalled: %v", e.Stalled())
		}
		time.Sleep(10 * time.Millisecond)
	}
	closed := make(chan error, 1)
	go func() { closed <- e.Close() }()
	select {
	case err := <-closed:
		if err == nil || !strings.Contains(err.Error(), "GPU(s) [1] hung at shutdown") || !strings.Contains(err.Error(), "still blocked") {
			t.Errorf("Close: %v, want the hung GPU 1 and the blocked shutdown named", err)
		}
	case <-time.After(4 * shutdownTimeout):
		t.Fatal("Close blocked behind the hung NVML call")
	}
}

// TestPowerSourceStableOverFallbacks: field 186 fails on GPU 0 for three
// reads; each is read through nvmlDeviceGetPowerUsage (a 1 s average on
// Hopper) and counted as reason power_fallback, while joulemark_gpu_info
// keeps power_source instant (one series: a label flipping on each
// fallback read would start a new series each time and break group_left
// joins). Only a fallback lasting sourceSwitchReads reads in a row
// relabels it average, and as many reads of the field label it instant
// again.
func TestPowerSourceStableOverFallbacks(t *testing.T) {
	clk := newFakeClock()
	m := newMockNVML()
	fail := 0
	dev := nvmlmock.Device(m.srv, 0)
	fields := dev.GetFieldValuesFunc
	dev.GetFieldValuesFunc = func(fv []nvml.FieldValue) nvml.Return {
		ret := fields(fv)
		if fail > 0 {
			for k := range fv {
				if fv[k].FieldId == nvml.FI_DEV_POWER_INSTANT {
					fv[k].NvmlReturn = uint32(nvml.ERROR_UNKNOWN)
				}
			}
		}
		return ret
	}
	dev.GetPowerUsageFunc = func() (uint32, nvml.Return) { return 69000, nvml.SUCCESS }
	b, err := gpu.NewNVML(m.srv, gpu.NVMLOptions{Clock: clk, MaxGPUs: 1})
	if err != nil {
		t.Fatal(err)
	}
	e, err := newExp(Config{Backend: b, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	step := func(n int) {
		for range n {
			clk.Advance(e.cfg.Interval)
			m.advance(e.cfg.Interval)
			e.SampleOnce()
		}
	}
	e.SampleOnce()
	source := func() string {
		t.Helper()
		return grepLines(fetchMetricsHandler(t, e), "joulemark_gpu_info")
	}
	for _, tc := range []struct {
		fail, reads int
		want        string
	}{
		{1, 1, `power_source="instant"`},                                 // a fallback read
		{2, 3, `power_source="instant"`},                                 // two more, then the field
		{sourceSwitchReads, sourceSwitchReads, `power_source="average"`}, // a lasting fallback
		{0, sourceSwitchReads - 1, `power_source="average"`},             // not yet back
		{0, 1, `power_source="instant"`},
	} {
		fail = tc.fail
		for range tc.reads {
			step(1)
			fail = max(fail-1, 0)
		}
		if got := source(); !strings.Contains(got, tc.want) || strings.Count(got, "power_source=") != 1 {
			t.Errorf("after %d fallback reads of %d: %s, want one series with %s", tc.fail, tc.reads, got, tc.want)
		}
	}
	want := fmt.Sprintf(`joulemark_sampler_errors_total{gpu="0",reason="power_fallback",uuid=%q} %d`, nvmlmock.UUID(0), 3+sourceSwitchReads)
	if body := fetchMetricsHandler(t, e); !strings.Contains(body, want) {
		t.Errorf("/metrics lacks %s", want)
	}
}
