//go:build cgo

package exporter

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"

	"github.com/joulemark/joulemark/internal/gpu"
	"github.com/joulemark/joulemark/internal/nvmlmock"
	"github.com/joulemark/joulemark/internal/podresources"
)

// TestPodEnergySMShare: two pods time-slice GPU 1 of go-nvml's mock; NVML
// reports their processes' SM utilization (pid 100: 20 % and 40 %, pid 200:
// 10 %), /proc/<pid>/cgroup puts them in pods uid-a and uid-b, the
// kubelet's checkpoint names those pods; the GPU's energy splits 3:1.
// Without process samples the split falls back to even.
func TestPodEnergySMShare(t *testing.T) {
	clk := newFakeClock()
	m := newMockNVML()
	var mu sync.Mutex
	procs := []nvml.ProcessUtilizationSample{{Pid: 100, SmUtil: 20}, {Pid: 100, SmUtil: 40}, {Pid: 200, SmUtil: 10}, {Pid: 300, SmUtil: 90}}
	nvmlmock.Device(m.srv, 1).GetProcessUtilizationFunc = func(since uint64) ([]nvml.ProcessUtilizationSample, nvml.Return) {
		mu.Lock()
		defer mu.Unlock()
		if want := uint64(clk.Now().Add(-2 * time.Second).UnixMicro()); since != want {
			t.Errorf("GetProcessUtilization since %d, want %d", since, want)
		}
		if procs == nil {
			return nil, nvml.ERROR_NOT_FOUND
		}
		return procs, nvml.SUCCESS
	}
	b, err := gpu.NewNVML(m.srv, gpu.NVMLOptions{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	proc, dir := t.TempDir(), t.TempDir()
	for pid, cg := range map[string]string{
		"100": "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-podaaaaaaaa_0000_4000_8000_000000000001.slice/cri-containerd-1.scope\n",
		"200": "0::/kubepods/besteffort/podbbbbbbbb-0000-4000-8000-000000000002/2\n",
		"300": "0::/system.slice/other.service\n", // not a pod: ignored
	} {
		if err := os.MkdirAll(filepath.Join(proc, pid), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(proc, pid, "cgroup"), []byte(cg), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	g1 := nvmlmock.UUID(1)
	cp := filepath.Join(dir, "kubelet_internal_checkpoint")
	if err := os.WriteFile(cp, []byte(`{"Data":{"PodDeviceEntries":[
	 {"PodUID":"aaaaaaaa-0000-4000-8000-000000000001","ContainerName":"engine","ResourceName":"nvidia.com/gpu","DeviceIDs":{"0":["`+g1+`::0"]}},
	 {"PodUID":"bbbbbbbb-0000-4000-8000-000000000002","ContainerName":"engine","ResourceName":"nvidia.com/gpu","DeviceIDs":{"0":["`+g1+`::1"]}}]}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	fake, cli := fakeKubelet(t)
	fake.Set([]podresources.Allocation{alloc("serve", "a", g1+"::0"), alloc("serve", "b", g1+"::1")})
	e, err := newExp(Config{Backend: b, Clock: clk, Pods: &PodConfig{Lister: cli, ProcRoot: proc, Checkpoint: cp}})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	r := &podRig{t: t, clk: clk, e: e}
	step := func(n int) float64 {
		before := e.gpus[1].energy
		for range n {
			clk.Advance(e.cfg.Interval)
			m.advance(e.cfg.Interval)
			e.SampleOnce()
		}
		return e.gpus[1].energy - before
	}
	e.SampleOnce()
	e.attr.refresh(context.Background())
	e.attr.splitByProcess()
	de := step(20)
	a, _ := r.value("joulemark_pod_energy_joules_total", "pod", "a")
	bb, _ := r.value("joulemark_pod_energy_joules_total", "pod", "b")
	if de <= 0 || math.Abs(a-0.75*de) > 1e-9*de || math.Abs(bb-0.25*de) > 1e-9*de {
		t.Errorf("SM split: a %.4f J, b %.4f J of %.4f J; want 3:1", a, bb, de)
	}
	if v, ok := r.value("joulemark_pod_energy_attribution_info", "pod", "a", "method", MethodSMShare); !ok || v != 1 {
		t.Error("method sm_share not reported")
	}

	mu.Lock()
	procs = nil
	mu.Unlock()
	e.attr.splitByProcess()
	de = step(10)
	a2, _ := r.value("joulemark_pod_energy_joules_total", "pod", "a")
	b2, _ := r.value("joulemark_pod_energy_joules_total", "pod", "b")
	if math.Abs((a2-a)-de/2) > 1e-9*de || math.Abs((b2-bb)-de/2) > 1e-9*de {
		t.Errorf("no process samples: a +%.4f J, b +%.4f J of %.4f J; want even", a2-a, b2-bb, de)
	}
	if _, ok := r.value("joulemark_pod_energy_attribution_info", "pod", "a", "method", MethodEven); !ok {
		t.Error("method even not reported after the fallback")
	}
}

// BenchmarkAttribution8GPUsMockNVML is one second of an exporter on go-nvml's
// 8-GPU mock with energy per pod, every GPU time-sliced between two pods
// (the per-process split on all 8): 10 sampling ticks, one per-process
// split, and a kubelet List every 5 s over the real gRPC socket (the fake
// kubelet runs in this process, so its CPU counts too). It reports the CPU
// share of one core at 10 Hz.
func BenchmarkAttribution8GPUsMockNVML(b *testing.B) {
	clk := newFakeClock()
	m := newMockNVML()
	proc, dir := b.TempDir(), b.TempDir()
	var allocs []podresources.Allocation
	var cp strings.Builder
	cp.WriteString(`{"Data":{"PodDeviceEntries":[`)
	for i := range 8 {
		g := nvmlmock.UUID(i)
		nvmlmock.Device(m.srv, i).GetProcessUtilizationFunc = func(uint64) ([]nvml.ProcessUtilizationSample, nvml.Return) {
			return []nvml.ProcessUtilizationSample{{Pid: uint32(1000 + i), SmUtil: 60}, {Pid: uint32(2000 + i), SmUtil: 20}}, nvml.SUCCESS
		}
		for k, who := range []string{"a", "b"} {
			uid := fmt.Sprintf("%08d-0000-4000-8000-%012d", i, k)
			pid := fmt.Sprint((k+1)*1000 + i)
			if err := os.MkdirAll(filepath.Join(proc, pid), 0o755); err != nil {
				b.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(proc, pid, "cgroup"), []byte("0::/kubepods/burstable/pod"+uid+"/c\n"), 0o644); err != nil {
				b.Fatal(err)
			}
			dev := fmt.Sprintf("%s::%d", g, k)
			allocs = append(allocs, alloc("serve", fmt.Sprintf("%s-%d", who, i), dev))
			if i+k > 0 {
				cp.WriteString(",")
			}
			fmt.Fprintf(&cp, `{"PodUID":%q,"ContainerName":"engine","ResourceName":"nvidia.com/gpu","DeviceIDs":{"0":[%q]}}`, uid, dev)
		}
	}
	cp.WriteString(`]}}`)
	cpPath := filepath.Join(dir, "checkpoint")
	if err := os.WriteFile(cpPath, []byte(cp.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	fake, cli := fakeKubelet(b)
	fake.Set(allocs)
	nv, err := gpu.NewNVML(m.srv, gpu.NVMLOptions{Clock: clk})
	if err != nil {
		b.Fatal(err)
	}
	e, err := newExp(Config{Backend: nv, Clock: clk, Pods: &PodConfig{Lister: cli, ProcRoot: proc, Checkpoint: cpPath}})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	ctx := context.Background()
	e.SampleOnce()
	e.attr.refresh(ctx)
	e.attr.splitByProcess()
	if e.attr.gpus[7].method != MethodSMShare {
		b.Fatalf("GPU 7 split by %q, want sm_share", e.attr.gpus[7].method)
	}
	b.ResetTimer()
	cpu0, n := cpuTime(), 0
	for b.Loop() {
		for range 10 {
			clk.Advance(100 * time.Millisecond)
			m.advance(100 * time.Millisecond)
			e.SampleOnce()
		}
		e.attr.splitByProcess()
		if n%5 == 0 {
			e.attr.refresh(ctx)
		}
		n++
	}
	b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/float64(n)/1e9*100, "%core@8gpu-10Hz")
}

// migMock puts GPU 2 of m in MIG mode with instances of the given SM
// counts (UUIDs MIG-aaaaaaaa-…-00000000000<k+1>), and returns their UUIDs.
func migMock(t *testing.T, m *mockNVML, sms ...uint32) []string {
	return migMockLive(t, m, &sms)
}

// migMockLive is migMock over *sms, which the test may shrink (instances
// destroyed); instance k has GPU instance ID k+1 and compute instance 0.
func migMockLive(t *testing.T, m *mockNVML, sms *[]uint32) []string {
	var migs []string
	for k := range *sms {
		migs = append(migs, fmt.Sprintf("MIG-aaaaaaaa-0000-4000-8000-%012d", k+1))
	}
	dev := nvmlmock.Device(m.srv, 2)
	dev.GetMigModeFunc = func() (int, int, nvml.Return) { return nvml.DEVICE_MIG_ENABLE, nvml.DEVICE_MIG_ENABLE, nvml.SUCCESS }
	dev.GetMaxMigDeviceCountFunc = func() (int, nvml.Return) { return 7, nvml.SUCCESS }
	dev.GetMigDeviceHandleByIndexFunc = func(k int) (nvml.Device, nvml.Return) {
		if k >= len(*sms) {
			return nil, nvml.ERROR_NOT_FOUND
		}
		sms := *sms
		return &mock.Device{
			GetGpuInstanceIdFunc:     func() (int, nvml.Return) { return k + 1, nvml.SUCCESS },
			GetComputeInstanceIdFunc: func() (int, nvml.Return) { return 0, nvml.SUCCESS },
			GetUUIDFunc:              func() (string, nvml.Return) { return migs[k], nvml.SUCCESS },
			GetAttributesFunc: func() (nvml.DeviceAttributes, nvml.Return) {
				return nvml.DeviceAttributes{MultiprocessorCount: sms[k], MemorySizeMB: uint64(sms[k]) * 500}, nvml.SUCCESS
			},
		}, nvml.SUCCESS
	}
	dev.GetProcessUtilizationFunc = func(uint64) ([]nvml.ProcessUtilizationSample, nvml.Return) {
		t.Error("per-process utilization read on a MIG GPU")
		return nil, nvml.ERROR_NOT_SUPPORTED
	}
	return migs
}

// TestPodEnergyMIG: GPU 2 of go-nvml's mock is in MIG mode with three
// instances of 42, 14 and 42 SMs (a 3g, a 1g, a 3g); pods x and y hold the
// first two (MIG UUIDs, mapped to the GPU through NVML). The GPU's energy
// splits by instance size over all of the GPU's: x 42/98, y 14/98, and the
// unheld 42/98 is unallocated; both allocations are shared, the method is
// mig_size, and no per-process split is tried on a MIG GPU. A lone holder
// is a slice too: its share, never the whole GPU as exclusive.
func TestPodEnergyMIG(t *testing.T) {
	clk := newFakeClock()
	m := newMockNVML()
	migs := migMock(t, m, 42, 14, 42)
	b, err := gpu.NewNVML(m.srv, gpu.NVMLOptions{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	fake, cli := fakeKubelet(t, "nvidia.com/gpu", "nvidia.com/mig-*")
	mig := func(pod, id string) podresources.Allocation {
		return podresources.Allocation{Namespace: "batch", Pod: pod, Container: "main", Resource: "nvidia.com/mig-3g.40gb", DeviceID: id}
	}
	fake.Set([]podresources.Allocation{mig("x", migs[0]), mig("y", migs[1])})
	e, err := newExp(Config{Backend: b, Clock: clk, Pods: &PodConfig{Lister: cli, Checkpoint: "/nonexistent"}})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	r := &podRig{t: t, clk: clk, e: e}
	run := func() (de, x, y, un float64) {
		e.attr.refresh(context.Background())
		e.attr.splitByProcess()
		x0, _ := r.value("joulemark_pod_energy_joules_total", "pod", "x")
		y0, _ := r.value("joulemark_pod_energy_joules_total", "pod", "y")
		u0, _ := r.value("joulemark_unallocated_energy_joules_total", "gpu", "2")
		before := e.gpus[2].energy
		for range 20 {
			clk.Advance(e.cfg.Interval)
			m.advance(e.cfg.Interval)
			e.SampleOnce()
		}
		x, _ = r.value("joulemark_pod_energy_joules_total", "pod", "x")
		y, _ = r.value("joulemark_pod_energy_joules_total", "pod", "y")
		un, _ = r.value("joulemark_unallocated_energy_joules_total", "gpu", "2")
		return e.gpus[2].energy - before, x - x0, y - y0, un - u0
	}
	e.SampleOnce()
	de, x, y, un := run()
	near := func(got, want float64) bool { return math.Abs(got-want) <= 1e-9*de }
	if de <= 0 || !near(x, de*42/98) || !near(y, de*14/98) || !near(un, de*42/98) {
		t.Errorf("MIG split: x %.4f J, y %.4f J, unallocated %.4f J of GPU 2's %.4f J; want 42/98, 14/98, 42/98", x, y, un, de)
	}
	for _, p := range []string{"x", "y"} {
		if v, ok := r.value("joulemark_gpu_allocation_info", "pod", p, "gpu", "2", "shared", "true"); !ok || v != 1 {
			t.Errorf("pod %s: no shared allocation of GPU 2", p)
		}
		if _, ok := r.value("joulemark_pod_energy_attribution_info", "pod", p, "method", MethodMIGSize); !ok {
			t.Errorf("pod %s: method mig_size not reported", p)
		}
	}
	fake.Set([]podresources.Allocation{mig("x", migs[0])}) // x alone on the GPU
	de, x, _, un = run()
	if !near(x, de*42/98) || !near(un, de*56/98) {
		t.Errorf("lone slice: x %.4f J, unallocated %.4f J of %.4f J; want 42/98 and 56/98", x, un, de)
	}
	if _, ok := r.value("joulemark_pod_energy_attribution_info", "pod", "x", "method", MethodMIGSize); !ok {
		t.Error("a lone MIG slice is not labelled mig_size")
	}
	if v, ok := r.value("joulemark_gpu_allocation_info", "pod", "x", "gpu", "2", "shared", "true"); !ok || v != 1 {
		t.Error("a lone MIG slice is not a shared allocation")
	}
}

// TestPodMIGWithGPUDown: GPU 2 is in MIG mode with its instances held by
// pods while GPU 4 failed to open. Resolving the MIG device ids lists every
// GPU's instances; the GPU that is not open answers an error (its handle is
// never touched), and the MIG pods are still attributed. GPU 4 opening
// later (past its retry time) joins the UUID map: the pod holding it gets
// its energy, not "unallocated" until a restart.
func TestPodMIGWithGPUDown(t *testing.T) {
	clk := newFakeClock()
	m := newMockNVML()
	migs := migMock(t, m, 14, 14)
	var down sync.Mutex
	lost := true
	getHandle := m.srv.DeviceGetHandleByIndexFunc
	m.srv.DeviceGetHandleByIndexFunc = func(i int) (nvml.Device, nvml.Return) {
		down.Lock()
		defer down.Unlock()
		if i == 4 && lost {
			return nil, nvml.ERROR_UNKNOWN
		}
		return getHandle(i)
	}
	b, err := gpu.NewNVML(m.srv, gpu.NVMLOptions{Clock: clk, RetryInterval: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	fake, cli := fakeKubelet(t, "nvidia.com/gpu", "nvidia.com/mig-*")
	mig := func(pod, id string) podresources.Allocation {
		return podresources.Allocation{Namespace: "batch", Pod: pod, Container: "main", Resource: "nvidia.com/mig-3g.40gb", DeviceID: id}
	}
	fake.Set([]podresources.Allocation{mig("x", migs[0]), mig("y", migs[1]), alloc("serve", "late", nvmlmock.UUID(4))})
	e, err := newExp(Config{Backend: b, Clock: clk, Pods: &PodConfig{Lister: cli, Checkpoint: "/nonexistent"}})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	r := &podRig{t: t, clk: clk, e: e}
	e.SampleOnce()
	e.attr.refresh(context.Background()) // lists every GPU's MIG instances, GPU 4's included
	e.attr.splitByProcess()
	for range 20 {
		clk.Advance(e.cfg.Interval)
		m.advance(e.cfg.Interval)
		e.SampleOnce()
	}
	if x, _ := r.value("joulemark_pod_energy_joules_total", "pod", "x"); x <= 0 {
		t.Errorf("MIG pod x got %v J with GPU 4 down", x)
	}
	if v, ok := r.value("joulemark_pod_energy_joules_total", "pod", "late"); ok && v != 0 {
		t.Errorf("pod late got %v J while its GPU is down", v)
	}
	down.Lock()
	lost = false
	down.Unlock()
	clk.Advance(2 * time.Second)
	e.SampleOnce() // GPU 4 opens
	e.attr.refresh(context.Background())
	before := e.gpus[4].energy
	for range 10 {
		clk.Advance(e.cfg.Interval)
		m.advance(e.cfg.Interval)
		e.SampleOnce()
	}
	de := e.gpus[4].energy - before
	if v, _ := r.value("joulemark_pod_energy_joules_total", "pod", "late"); de <= 0 || math.Abs(v-de) > 1e-9*de {
		t.Errorf("pod late got %v J of GPU 4's %v J once it opened", v, de)
	}
}
