package exporter

import (
	"bytes"
	"context"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/expfmt"

	"github.com/joulemark/joulemark/internal/gpu"
	"github.com/joulemark/joulemark/internal/podresources"
	"github.com/joulemark/joulemark/internal/testkit/fakeclock"
	"github.com/joulemark/joulemark/internal/testkit/golden"
)

var podMetricNames = []string{
	"joulemark_kubelet_up", "joulemark_kubelet_errors_total", "joulemark_gpu_allocation_info",
	"joulemark_pod_energy_joules_total", "joulemark_pod_energy_attribution_info", "joulemark_unallocated_energy_joules_total",
}

// kubeletSocket is a unix socket path short enough for sun_path.
func kubeletSocket(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "kl")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return filepath.Join(dir, "kubelet.sock")
}

// fakeKubelet starts a fake kubelet on a fresh socket and a client of it
// reading resources (nvidia.com/gpu when none are given); both close when
// the test ends.
func fakeKubelet(t testing.TB, resources ...string) (*podresources.Fake, *podresources.Client) {
	t.Helper()
	if len(resources) == 0 {
		resources = []string{"nvidia.com/gpu"}
	}
	sock := kubeletSocket(t)
	fake, err := podresources.NewFake(sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fake.Close() })
	cli, err := podresources.Dial(sock, resources, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	return fake, cli
}

// podRig is an exporter over four simulated GPUs with exact energy, a fake
// kubelet, and a fake clock the test steps.
type podRig struct {
	t    testing.TB
	clk  *fakeclock.Clock
	sim  *gpu.Sim
	fake *podresources.Fake
	e    *Exporter
	log  *bytes.Buffer
}

func newPodRig(t testing.TB) *podRig {
	t.Helper()
	clk := fakeclock.New()
	sim, err := gpu.NewSim(gpu.SimConfig{GPUs: 4, Clock: clk, EnergyCounter: true, NoiseWatts: 0.5, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	for i, load := range []float64{0.9, 0.5, 0.2, 0} {
		if err := sim.SetGPULoad(i, load); err != nil {
			t.Fatal(err)
		}
	}
	sim.SetEngineState(gpu.EngineRunning)
	sock := kubeletSocket(t)
	fake, err := podresources.NewFake(sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fake.Close() })
	cli, err := podresources.Dial(sock, []string{"nvidia.com/gpu", "nvidia.com/mig-*"}, 200*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	var logs bytes.Buffer
	e, err := newExp(Config{Backend: sim, Clock: clk, Logger: slog.New(slog.NewTextHandler(&logs, nil)),
		Pods: &PodConfig{Lister: cli, ProcRoot: t.TempDir(), Checkpoint: filepath.Join(t.TempDir(), "none")}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close() })
	e.SampleOnce()
	return &podRig{t: t, clk: clk, sim: sim, fake: fake, e: e, log: &logs}
}

func (r *podRig) uuid(i int) string { return r.e.gpus[i].dev.UUID }

func (r *podRig) step(n int) {
	for range n {
		r.clk.Advance(r.e.cfg.Interval)
		r.e.SampleOnce()
	}
}

func (r *podRig) refresh() { r.e.attr.refresh(context.Background()) }

func (r *podRig) value(name string, labels ...string) (float64, bool) {
	r.t.Helper()
	mfs, _, err := r.e.snapshot()
	if err != nil {
		r.t.Fatal(err)
	}
	want := map[string]string{}
	for k := 0; k+1 < len(labels); k += 2 {
		want[labels[k]] = labels[k+1]
	}
	return seriesValue(mfs, name, want)
}

func alloc(ns, pod, dev string) podresources.Allocation {
	return podresources.Allocation{Namespace: ns, Pod: pod, Container: "engine", Resource: "nvidia.com/gpu", DeviceID: dev}
}

// TestPodEnergyAcrossAllocationChange: pod a moves from GPU 0 to GPU 2 and c
// takes GPU 0; each pod's counter equals the simulator's exact integral over
// the GPUs it held while it held them, to far less than one sample's energy.
func TestPodEnergyAcrossAllocationChange(t *testing.T) {
	r := newPodRig(t)
	t0 := r.clk.Now()
	r.fake.Set([]podresources.Allocation{alloc("serve", "a", r.uuid(0)), alloc("serve", "b", r.uuid(1))})
	r.refresh()
	r.step(50)
	t1 := r.clk.Now()
	r.fake.Set([]podresources.Allocation{alloc("serve", "a", r.uuid(2)), alloc("serve", "b", r.uuid(1)), alloc("serve", "c", r.uuid(0))})
	r.refresh()
	r.step(70)
	t2 := r.clk.Now()

	ex := func(i int, a, b time.Time) float64 { return r.sim.ExactEnergy(i, a, b) }
	oneSample := 700 * r.e.cfg.Interval.Seconds()
	for _, c := range []struct {
		metric string
		labels []string
		want   float64
	}{
		{"joulemark_pod_energy_joules_total", []string{"pod", "a"}, ex(0, t0, t1) + ex(2, t1, t2)},
		{"joulemark_pod_energy_joules_total", []string{"pod", "b"}, ex(1, t0, t2)},
		{"joulemark_pod_energy_joules_total", []string{"pod", "c"}, ex(0, t1, t2)},
		{"joulemark_unallocated_energy_joules_total", []string{"gpu", "2"}, ex(2, t0, t1)},
		{"joulemark_unallocated_energy_joules_total", []string{"gpu", "3"}, ex(3, t0, t2)},
		{"joulemark_unallocated_energy_joules_total", []string{"gpu", "0"}, 0},
	} {
		got, ok := r.value(c.metric, c.labels...)
		if !ok {
			t.Errorf("%s%v missing", c.metric, c.labels)
			continue
		}
		if math.Abs(got-c.want) > 1e-3*oneSample {
			t.Errorf("%s%v = %.6f J, want the exact %.6f J", c.metric, c.labels, got, c.want)
		}
	}
	// Every joule is attributed once: pods plus unallocated equal the GPUs.
	var pods, gpus float64
	for _, p := range []string{"a", "b", "c"} {
		v, _ := r.value("joulemark_pod_energy_joules_total", "pod", p)
		pods += v
	}
	for i := range 4 {
		v, _ := r.value("joulemark_unallocated_energy_joules_total", "gpu", r.e.gpus[i].idx)
		pods += v
		gpus += r.e.gpus[i].energy
	}
	if math.Abs(pods-gpus) > 1e-6*gpus {
		t.Errorf("attributed %.6f J, the GPUs measured %.6f J", pods, gpus)
	}
}

// TestPodMetricsGolden holds the pod series to testdata/pod_metrics.prom:
// an exclusive GPU, a GPU time-sliced between two pods (replicas), a MIG
// GPU, an unallocated GPU.
func TestPodMetricsGolden(t *testing.T) {
	r := newPodRig(t)
	r.fake.Set([]podresources.Allocation{
		alloc("serve", "llama-0", r.uuid(0)),
		alloc("serve", "small-a", r.uuid(1)+"::0"),
		alloc("serve", "small-b", r.uuid(1)+"::1"),
		alloc("serve", "small-b", r.uuid(1)+"::2"),
		{Namespace: "batch", Pod: "job", Container: "main", Resource: "nvidia.com/mig-1g.10gb", DeviceID: "MIG-" + r.uuid(2) + "/1/0"},
		{Namespace: "serve", Pod: "other", Container: "engine", Resource: "nvidia.com/gpu", DeviceID: "GPU-ffffffff-0000-4000-8000-00000000ffff"},
		{Namespace: "serve", Pod: "broken", Container: "engine", Resource: "nvidia.com/gpu", DeviceID: "nvidia0"},
	})
	r.refresh()
	r.step(10)
	var buf bytes.Buffer
	mfs, _, err := r.e.snapshot()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		for _, n := range podMetricNames {
			if mf.GetName() == n {
				if _, err := expfmt.MetricFamilyToText(&buf, mf); err != nil { // sorted, stable
					t.Fatal(err)
				}
			}
		}
	}
	golden.Compare(t, "pod_metrics.prom", buf.Bytes())
	// the time-sliced GPU: small-b holds two of three replicas.
	a, _ := r.value("joulemark_pod_energy_joules_total", "pod", "small-a")
	b, _ := r.value("joulemark_pod_energy_joules_total", "pod", "small-b")
	if a <= 0 || math.Abs(b-2*a) > 1e-9*b {
		t.Errorf("even split by replicas: small-a %.6f J, small-b %.6f J, want b = 2a", a, b)
	}
	if m, ok := r.value("joulemark_pod_energy_attribution_info", "pod", "small-a", "method", MethodEven); !ok || m != 1 {
		t.Error("time-sliced GPU not marked method=even")
	}
}

// TestKubeletFailures: a kubelet that is absent, dies, answers slowly and
// comes back is logged, counted, never stops the sampling, and keeps the
// last allocations known.
func TestKubeletFailures(t *testing.T) {
	r := newPodRig(t)
	r.fake.Set([]podresources.Allocation{alloc("serve", "a", r.uuid(0))})
	r.refresh()
	r.step(5)
	if up, _ := r.value("joulemark_kubelet_up"); up != 1 {
		t.Fatalf("kubelet_up %v after a good read", up)
	}
	before, _ := r.value("joulemark_pod_energy_joules_total", "pod", "a")
	gpuBefore := r.e.gpus[0].energy

	r.fake.SetDelay(time.Minute) // slow: the 200ms timeout fires
	r.refresh()
	r.fake.SetDelay(0)
	if err := r.fake.Close(); err != nil { // dying: socket gone
		t.Fatal(err)
	}
	r.refresh()
	r.step(5)
	if up, _ := r.value("joulemark_kubelet_up"); up != 0 {
		t.Errorf("kubelet_up %v while the kubelet is down", up)
	}
	if n, _ := r.value("joulemark_kubelet_errors_total"); n != 2 {
		t.Errorf("kubelet_errors_total %v, want 2", n)
	}
	after, _ := r.value("joulemark_pod_energy_joules_total", "pod", "a")
	if after-before <= 0 || math.Abs((after-before)-(r.e.gpus[0].energy-gpuBefore)) > 1e-9 {
		t.Errorf("pod a got %.6f J while GPU 0 drew %.6f J with the kubelet down", after-before, r.e.gpus[0].energy-gpuBefore)
	}
	if r.e.gpus[0].samples != 11 {
		t.Errorf("GPU 0 sampled %d times, want 11", r.e.gpus[0].samples)
	}
	if !strings.Contains(r.log.String(), "reading GPU allocations from the kubelet failed") {
		t.Errorf("no log line for the failed read:\n%s", r.log)
	}

	fake, err := podresources.NewFake(r.fake.Socket()) // back
	if err != nil {
		t.Fatal(err)
	}
	defer fake.Close()
	fake.Set([]podresources.Allocation{alloc("serve", "b", r.uuid(0))})
	for range 100 {
		if r.refresh(); r.e.attr.up {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !r.e.attr.up {
		t.Fatal("the kubelet is not read again after it came back")
	}
	if !strings.Contains(r.log.String(), "works again") {
		t.Errorf("no log line for the recovery:\n%s", r.log)
	}
	// a left: its final counter stays for KeepScrapes (3) gathers, then goes.
	for k := 1; k <= 3; k++ {
		v, ok := r.value("joulemark_pod_energy_joules_total", "pod", "a")
		if !ok || v != after {
			t.Fatalf("gather %d after a left: %v %v, want its final %v", k, v, ok, after)
		}
	}
	if _, ok := r.value("joulemark_pod_energy_joules_total", "pod", "a"); ok {
		t.Error("pod a still on /metrics after 3 scrapes")
	}
	if _, ok := r.value("joulemark_pod_energy_joules_total", "pod", "b"); !ok {
		t.Error("pod b missing")
	}
	if up, _ := r.value("joulemark_kubelet_up"); up != 1 {
		t.Errorf("kubelet_up %v after it came back", up)
	}
}

// TestKubeletAbsent: without a socket no pod series, kubelet_up 0, one
// info line, and the GPU series as without attribution.
func TestKubeletAbsent(t *testing.T) {
	clk := fakeclock.New()
	sim, err := gpu.NewSim(gpu.SimConfig{GPUs: 2, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	cli, err := podresources.Dial(kubeletSocket(t), []string{"nvidia.com/gpu"}, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	var logs bytes.Buffer
	e, err := newExp(Config{Backend: sim, Clock: clk, Logger: slog.New(slog.NewTextHandler(&logs, nil)), Pods: &PodConfig{Lister: cli}})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	e.SampleOnce()
	e.attr.refresh(context.Background())
	e.attr.refresh(context.Background())
	clk.Advance(time.Second)
	e.SampleOnce()
	const want = `
# HELP joulemark_kubelet_errors_total Failed reads of the kubelet's PodResources API (socket missing, kubelet down, timeout, bad answer).
# TYPE joulemark_kubelet_errors_total counter
joulemark_kubelet_errors_total 2
# HELP joulemark_kubelet_up 1 when the last read of the kubelet's PodResources API succeeded.
# TYPE joulemark_kubelet_up gauge
joulemark_kubelet_up 0
`
	if err := testutil.GatherAndCompare(e.reg, strings.NewReader(want), podMetricNames...); err != nil {
		t.Error(err)
	}
	if n := strings.Count(logs.String(), "pod attribution waits"); n != 1 {
		t.Errorf("%d log lines for the missing socket, want 1:\n%s", n, logs.String())
	}
	if e.gpus[1].energy <= 0 {
		t.Error("GPU energy not integrated without a kubelet")
	}
}
