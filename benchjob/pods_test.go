package benchjob

import (
	"context"
	"errors"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/joulemark/joulemark/benchjob/openai/openaitest"
	"github.com/joulemark/joulemark/exporter"
	"github.com/joulemark/joulemark/internal/gpu"
	"github.com/joulemark/joulemark/internal/phaseapi"
	"github.com/joulemark/joulemark/internal/podresources"
)

// startPodExporter is a simulated exporter whose GPUs the given pods hold
// (a fake kubelet over the PodResources API, as --sim.allocations).
func startPodExporter(t *testing.T, gpus int, pods []podresources.SimPod) (*exporter.Exporter, *httptest.Server) {
	exp, srv, _ := startPodExporterFake(t, gpus, pods)
	return exp, srv
}

// startPodExporterFake is startPodExporter with the fake kubelet, whose
// pods the test changes (podresources.SimAllocations).
func startPodExporterFake(t *testing.T, gpus int, pods []podresources.SimPod) (*exporter.Exporter, *httptest.Server, *podresources.Fake) {
	t.Helper()
	sim, err := gpu.NewSim(gpu.SimConfig{GPUs: gpus})
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "kubelet")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "kubelet.sock")
	fake, err := podresources.NewFake(sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fake.Close() })
	var uuids []string
	for _, d := range sim.Devices() {
		uuids = append(uuids, d.UUID)
	}
	fake.Set(podresources.SimAllocations(pods, uuids))
	cli, err := podresources.Dial(sock, []string{"nvidia.com/gpu"}, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	cfg := exporter.Defaults()
	cfg.Backend, cfg.Interval, cfg.ReleaseHold = sim, 10*time.Millisecond, 200*time.Millisecond
	cfg.ReleaseWindow, cfg.ReleaseMaxWait, cfg.APIToken = 50*time.Millisecond, 20*time.Second, "tok"
	cfg.Pods = &exporter.PodConfig{Lister: cli, Refresh: 20 * time.Millisecond, Checkpoint: "/nonexistent"}
	exp, err := exporter.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	exp.Start(ctx)
	t.Cleanup(func() { exp.Close() })
	for range 200 {
		if _, ok := exp.PodsHolding(); ok {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	srv := httptest.NewServer(exp.Handler())
	t.Cleanup(srv.Close)
	return exp, srv, fake
}

// TestRunMeasuresOnlyItsEnginesPod: on an exporter that knows which pods
// hold its GPUs, a run naming neither the engine's pod nor its GPUs is
// refused in pre-flight, one line naming the pods and their GPUs, before
// any run directory exists; naming the pod by a name prefix measures its
// GPUs alone.
func TestRunMeasuresOnlyItsEnginesPod(t *testing.T) {
	exp, expSrv := startPodExporter(t, 4, []podresources.SimPod{{Namespace: "prod", Pod: "vllm-7d9f-x2k", GPUs: []int{0, 1}}, {Namespace: "prod", Pod: "sglang-0", GPUs: []int{2, 3}}})
	devs := exp.Devices()
	srv := openaitest.New(openaitest.Behavior{})
	defer srv.Close()
	t.Setenv("JOULEMARK_API_TOKEN", "tok")
	cfg := testConfig(t, srv.BaseURL())
	cfg.Exporters, cfg.RunID = []string{expSrv.URL}, "no-pod"
	_, err := runFake(cfg)
	want := "prod/sglang-0 (" + devs[2].UUID + ", " + devs[3].UUID + "); prod/vllm-7d9f-x2k (" + devs[0].UUID + ", " + devs[1].UUID + ")"
	if !errors.Is(err, ErrPreflight) || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "--engine.pod") {
		t.Fatalf("err %v, want a pre-flight refusal naming %s", err, want)
	}
	if entries, _ := os.ReadDir(cfg.RunsDir); len(entries) != 0 {
		t.Errorf("a run directory was created: %v", entries)
	}

	cfg.Engine.Pod, cfg.RunID = "prod/vllm-*", "pod-prefix"
	res, err := runFake(cfg)
	if err != nil {
		t.Fatal(err)
	}
	st := res.Release[expSrv.URL]
	if st == nil || len(st.GPUs) != 2 || st.GPUs[0].UUID != devs[0].UUID || st.GPUs[1].UUID != devs[1].UUID ||
		st.Selector == nil || st.Selector.Pod != "prod/vllm-7d9f-x2k" || len(st.CoTenants) != 0 {
		t.Errorf("the run measured %+v", st)
	}
}

// podEngine is a fakeEngine whose start gives the kubelet its pod, as a
// Deployment scaled from 0 does.
type podEngine struct {
	fakeEngine
	onStart func()
}

func (e *podEngine) Start(ctx context.Context) error {
	if e.onStart != nil {
		e.onStart()
	}
	return e.fakeEngine.Start(ctx)
}

// TestLifecycleAwaitsEnginePod: a lifecycle run names its engine's pod by
// a prefix before the pod exists (a Deployment at 0 replicas): pre-flight
// accepts it, the exporter resolves it once the engine started, and the
// run measures the pod's GPUs alone. A pod that never comes stops the run
// before its load, naming the pods that hold the GPUs.
func TestLifecycleAwaitsEnginePod(t *testing.T) {
	train := podresources.SimPod{Namespace: "batch", Pod: "train-0", GPUs: []int{2}}
	exp, expSrv, fake := startPodExporterFake(t, 4, []podresources.SimPod{train})
	devs := exp.Devices()
	uuids := []string{devs[0].UUID, devs[1].UUID, devs[2].UUID, devs[3].UUID}
	srv := openaitest.New(openaitest.Behavior{})
	defer srv.Close()
	t.Setenv("JOULEMARK_API_TOKEN", "tok")
	cfg := testConfig(t, srv.BaseURL())
	cfg.Exporters, cfg.RunID, cfg.Engine.Pod = []string{expSrv.URL}, "lc-pod", "prod/vllm-*"
	opts := testOptions()
	opts.Engine = &podEngine{onStart: func() {
		fake.Set(podresources.SimAllocations([]podresources.SimPod{train, {Namespace: "prod", Pod: "vllm-5c8-abc", GPUs: []int{0, 1}}}, uuids))
	}}
	res, err := Run(context.Background(), cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	st := res.Release[expSrv.URL]
	if st == nil || len(st.GPUs) != 2 || st.GPUs[0].UUID != devs[0].UUID || st.GPUs[1].UUID != devs[1].UUID ||
		st.Selector == nil || st.Selector.Pod != "prod/vllm-5c8-abc" || st.SelectorPending || len(st.CoTenants) != 0 {
		t.Errorf("the run measured %+v", st)
	}

	fake.Set(podresources.SimAllocations([]podresources.SimPod{train}, uuids))
	cfg.RunID = "lc-no-pod"
	opts.Engine = &fakeEngine{}
	_, err = Run(context.Background(), cfg, opts)
	if err == nil || !strings.Contains(err.Error(), "no load was sent") || !strings.Contains(err.Error(), "batch/train-0 ("+devs[2].UUID+")") {
		t.Fatalf("err %v, want the run stopped before its load, naming batch/train-0", err)
	}
	if st, _ := exp.RunStatus("lc-no-pod"); len(st.Phases) == 0 || st.Phases[len(st.Phases)-1].Phase == "formal" || slices.ContainsFunc(st.Phases, func(p phaseapi.PhaseStatus) bool { return p.Phase == "warmup" }) {
		t.Errorf("phases %+v: want none past the startup", st.Phases)
	}
}
