package exporter

import (
	"context"
	"io"
	"math"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/joulemark/joulemark/internal/contract"
	"github.com/joulemark/joulemark/internal/gpu"
	"github.com/joulemark/joulemark/internal/phaseapi"
	"github.com/joulemark/joulemark/internal/podresources"
)

// selectorHarness is a harness over four simulated GPUs with exact energy
// and a fake kubelet.
func selectorHarness(t *testing.T) (*harness, *podresources.Fake) {
	fake, cli := fakeKubelet(t)
	h := newHarness(t, gpu.SimConfig{GPUs: 4, Seed: 5, EnergyCounter: true},
		Config{ReleaseHold: 2 * time.Second, Pods: &PodConfig{Lister: cli, Checkpoint: "/nonexistent"}})
	return h, fake
}

func uuidsOf(gs []phaseapi.GPUInfo) []string {
	var out []string
	for _, g := range gs {
		out = append(out, g.UUID)
	}
	return out
}

// TestRunMeasuresSelectedGPUs: a run whose first phase selects GPUs 0 and 2
// has phase energies, baseline and release over those only: each phase's
// energy is the simulator's exact integral over GPUs 0 and 2, the release
// closes while GPU 3 (not selected) stays loaded, and /metrics and the API
// name only the selected GPUs.
func TestRunMeasuresSelectedGPUs(t *testing.T) {
	h, _ := selectorHarness(t)
	ctx := context.Background()
	devs := h.exp.Devices()
	sel := phaseapi.Selector{GPUs: []string{devs[2].UUID, devs[0].UUID}}
	ts := map[contract.Phase]time.Time{}
	st, err := h.client.StartPhaseSelect(ctx, "sel", contract.Idle, sel)
	if err != nil {
		t.Fatal(err)
	}
	ts[contract.Idle] = h.clk.Now()
	if got := uuidsOf(st.GPUs); !slices.Equal(got, []string{devs[0].UUID, devs[2].UUID}) {
		t.Fatalf("run GPUs %v, want GPUs 0 and 2", got)
	}
	h.step(5 * time.Second)
	ts[contract.Formal] = h.post("sel", contract.Formal)
	h.sim.SetEngineState(gpu.EngineRunning)
	h.sim.SetLoad(0.8)
	h.step(10 * time.Second)
	ts[contract.Release] = h.clk.Now()
	// the same selection again is a retry-safe no-op; another is refused
	if _, err := h.client.StartPhaseSelect(ctx, "sel", contract.Release, sel); err != nil {
		t.Fatal(err)
	}
	if _, err := h.client.StartPhaseSelect(ctx, "sel", contract.Release, phaseapi.Selector{GPUs: []string{devs[1].UUID}}); !phaseapi.IsStatus(err, http.StatusConflict) {
		t.Errorf("changing the selection: %v, want 409", err)
	}
	h.sim.SetEngineState(gpu.EngineStopped)
	h.sim.SetLoad(0)
	if err := h.sim.SetGPULoad(3, 1); err != nil { // not selected: must not hold the release open
		t.Fatal(err)
	}
	h.step(90 * time.Second)
	st, err = h.client.Run(ctx, "sel")
	if err != nil {
		t.Fatal(err)
	}
	if st.Release.State != phaseapi.ReleaseClosed {
		t.Fatalf("release %+v, want closed (GPU 3 is not measured)", st.Release)
	}
	if st.Selector == nil || len(st.Selector.GPUs) != 2 {
		t.Errorf("status selector %+v", st.Selector)
	}
	for k, ps := range st.Phases {
		end := h.clk.Now()
		if ps.End != nil {
			end = Time(*ps.End)
		}
		start := Time(ps.Start)
		want := h.sim.ExactEnergy(0, start, end) + h.sim.ExactEnergy(2, start, end)
		if math.Abs(ps.EnergyJoules-want) > 1e-6*want {
			t.Errorf("phase %s: %.4f J, want GPUs 0+2 exact %.4f J", ps.Phase, ps.EnergyJoules, want)
		}
		if len(ps.GPUs) != 2 || ps.GPUs[0].GPU != 0 || ps.GPUs[1].GPU != 2 {
			t.Errorf("phase %d lists GPUs %+v", k, ps.GPUs)
		}
	}
	if st.Idle == nil || len(st.Idle.Baseline) != 2 {
		t.Errorf("idle baseline %+v, want GPUs 0 and 2", st.Idle)
	}
	m := fetchMetricsHandler(t, h.exp)
	for _, l := range strings.Split(m, "\n") {
		if (strings.HasPrefix(l, "joulemark_phase_energy_joules{") || strings.HasPrefix(l, "joulemark_run_baseline_power_watts{")) &&
			(strings.Contains(l, devs[1].UUID) || strings.Contains(l, devs[3].UUID)) {
			t.Errorf("/metrics has an unselected GPU: %s", l)
		}
	}
	if !strings.Contains(m, `joulemark_phase_energy_joules{gpu="2",phase="formal",run_id="sel"`) {
		t.Error("/metrics lacks GPU 2's formal energy")
	}
}

// TestRunSelectsPodGPUs: {"pod": "ns/name"} selects the GPUs the kubelet
// lists for that pod; selector errors answer 400 or 409 and start nothing.
func TestRunSelectsPodGPUs(t *testing.T) {
	h, fake := selectorHarness(t)
	ctx := context.Background()
	devs := h.exp.Devices()
	base := []podresources.Allocation{alloc("serve", "llama-0", devs[1].UUID), alloc("serve", "llama-0", devs[3].UUID), alloc("serve", "other", devs[0].UUID)}
	fake.Set(append(base, alloc("serve", "sidecar", devs[3].UUID+"::1")))
	h.exp.attr.refresh(ctx)
	st, err := h.client.StartPhaseSelect(ctx, "pod", contract.Idle, phaseapi.Selector{Pod: "serve/llama-0"})
	if err != nil {
		t.Fatal(err)
	}
	if got := uuidsOf(st.GPUs); !slices.Equal(got, []string{devs[1].UUID, devs[3].UUID}) {
		t.Errorf("pod run GPUs %v, want GPUs 1 and 3", got)
	}
	// co-tenants of the run's GPUs are named: at selection, and as the
	// kubelet lists new ones (serve/other holds GPU 0, not the run's)
	if !slices.Equal(st.CoTenants, []string{"serve/sidecar"}) {
		t.Errorf("co-tenants %v, want serve/sidecar", st.CoTenants)
	}
	fake.Set(append(base, alloc("batch", "job", devs[1].UUID+"::2")))
	h.exp.attr.refreshAndNotify(ctx)
	if st, _ := h.exp.RunStatus("pod"); !slices.Equal(st.CoTenants, []string{"batch/job", "serve/sidecar"}) {
		t.Errorf("co-tenants %v, want batch/job and serve/sidecar", st.CoTenants)
	}
	for _, c := range []struct {
		name string
		sel  phaseapi.Selector
		code int
	}{
		{"unknown uuid", phaseapi.Selector{GPUs: []string{"GPU-nope"}}, 400},
		{"both", phaseapi.Selector{GPUs: []string{devs[0].UUID}, Pod: "serve/other"}, 400},
		{"bad pod", phaseapi.Selector{Pod: "llama-0"}, 400},
		{"pod without GPUs", phaseapi.Selector{Pod: "serve/gone"}, 409},
	} {
		if _, err := h.client.StartPhaseSelect(ctx, "bad-"+strings.ReplaceAll(c.name, " ", "-"), contract.Formal, c.sel); !phaseapi.IsStatus(err, c.code) {
			t.Errorf("%s: %v, want %d", c.name, err, c.code)
		}
		if _, ok := h.exp.RunStatus("bad-" + strings.ReplaceAll(c.name, " ", "-")); ok {
			t.Errorf("%s: a refused selector started a run", c.name)
		}
	}
	// Issue 33 low: an empty list widened the run to every GPU, a repeated
	// key kept its last value, a key spelled in other case was taken.
	for name, c := range map[string]struct{ body, want string }{
		"unknown body field": {`{"gpu": 1}`, "unknown"},
		"trailing data":      {`{"gpus": ["` + devs[0].UUID + `"]} garbage`, "data after"},
		"empty gpus list":    {`{"gpus": []}`, "gpus: empty list; omit the field for all GPUs"},
		"duplicate key":      {`{"gpus": ["GPU-nope"], "gpus": ["` + devs[0].UUID + `"]}`, "given twice"},
		"key in other case":  {`{"GPUs": ["` + devs[0].UUID + `"]}`, "(keys: gpus, pod, spelled so)"},
	} {
		req, _ := http.NewRequest("POST", strings.TrimSuffix(h.client.BaseURL(), "/")+"/api/v1/runs/junk/phases/idle", strings.NewReader(c.body))
		req.Header.Set("Authorization", "Bearer "+testToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 400 || !strings.Contains(string(b), c.want) {
			t.Errorf("%s: %d %s, want 400 saying %q", name, resp.StatusCode, b, c.want)
		}
	}
	// without attribution a pod selector cannot be resolved
	plain := newHarness(t, gpu.SimConfig{GPUs: 2}, Config{})
	if _, err := plain.client.StartPhaseSelect(ctx, "p", contract.Idle, phaseapi.Selector{Pod: "a/b"}); !phaseapi.IsStatus(err, 409) || !strings.Contains(err.Error(), "kubelet") {
		t.Errorf("pod selector without a kubelet: %v", err)
	}
}

// TestPodPatternAndPreflightPods: a name prefix (namespace/prefix*) selects
// the one pod it matches, which the run's selector then names; a prefix
// matching none or several is refused naming the pods; pre-flight lists
// the pods holding the GPUs.
func TestPodPatternAndPreflightPods(t *testing.T) {
	h, fake := selectorHarness(t)
	ctx := context.Background()
	devs := h.exp.Devices()
	fake.Set([]podresources.Allocation{alloc("prod", "vllm-7d9f-x2k", devs[0].UUID), alloc("prod", "vllm-7d9f-x2k", devs[1].UUID),
		alloc("prod", "sglang-0", devs[2].UUID), alloc("prod", "sglang-1", devs[3].UUID)})
	h.exp.attr.refresh(ctx)
	pf, err := h.client.Preflight(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	want := "prod/sglang-0 (" + devs[2].UUID + "); prod/sglang-1 (" + devs[3].UUID + "); prod/vllm-7d9f-x2k (" + devs[0].UUID + ", " + devs[1].UUID + ")"
	if !pf.AllocationsKnown || phaseapi.DescribePods(pf.Pods) != want {
		t.Errorf("preflight pods %v %q, want %q", pf.AllocationsKnown, phaseapi.DescribePods(pf.Pods), want)
	}
	st, err := h.client.StartPhaseSelect(ctx, "prefix", contract.Idle, phaseapi.Selector{Pod: "prod/vllm-*"})
	if err != nil {
		t.Fatal(err)
	}
	if got := uuidsOf(st.GPUs); !slices.Equal(got, []string{devs[0].UUID, devs[1].UUID}) || st.Selector == nil || st.Selector.Pod != "prod/vllm-7d9f-x2k" || len(st.CoTenants) != 0 {
		t.Errorf("prefix run GPUs %v selector %+v co-tenants %v", got, st.Selector, st.CoTenants)
	}
	for pattern, msg := range map[string]string{"prod/sglang-*": "matches 2 pods holding this exporter's GPUs: prod/sglang-0, prod/sglang-1",
		"prod/tgi-*": "pods holding them: prod/sglang-0", "other/vllm-*": "holds none"} {
		_, err := h.client.StartPhaseSelect(ctx, "refused", contract.Formal, phaseapi.Selector{Pod: pattern})
		if !phaseapi.IsStatus(err, 409) || !strings.Contains(err.Error(), msg) {
			t.Errorf("%s: %v, want 409 with %q", pattern, err, msg)
		}
		if _, err := h.client.PreflightPod(ctx, "", pattern, false); !phaseapi.IsStatus(err, 422) || !strings.Contains(err.Error(), msg) {
			t.Errorf("preflight %s: %v, want 422 with %q", pattern, err, msg)
		}
	}
	if pf, err := h.client.PreflightPod(ctx, "", "prod/vllm-*", false); err != nil || pf.Pod != "prod/vllm-7d9f-x2k" || len(pf.PodGPUs) != 2 {
		t.Errorf("preflight prod/vllm-*: %+v %v", pf, err)
	}
	// a run measuring every GPU, two pods holding them: both are named
	st, err = h.client.StartPhase(ctx, "all", contract.Idle)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(st.CoTenants, []string{"prod/sglang-0", "prod/sglang-1", "prod/vllm-7d9f-x2k"}) {
		t.Errorf("co-tenants of a run on every GPU: %v", st.CoTenants)
	}
}

func TestParsePodPattern(t *testing.T) {
	for _, bad := range []string{"", "pod", "/pod", "ns/", "ns/*", "ns/a/b", "n*s/pod", "ns/a*b"} {
		if _, _, _, err := phaseapi.ParsePodPattern(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if !phaseapi.MatchPod("ns/vllm-*", "ns/vllm-abc") || phaseapi.MatchPod("ns/vllm-*", "other/vllm-abc") || phaseapi.MatchPod("ns/vllm", "ns/vllm-abc") || !phaseapi.MatchPod("ns/vllm", "ns/vllm") {
		t.Error("MatchPod")
	}
}

// TestPodSelectorAwaitsLifecyclePod: a lifecycle's engine pod starts after
// the idle baseline (a Deployment scaled from 0). Its idle and startup
// phases wait for the pod, measuring every GPU and publishing no per-GPU
// phase energy; the warm-up resolves the pod, and from then on the run,
// all its phases included, counts only the pod's GPUs, and names as
// co-tenant a pod that held one of them while it waited. A pod that never
// comes is refused at the warm-up, naming the pods that hold GPUs.
func TestPodSelectorAwaitsLifecyclePod(t *testing.T) {
	h, fake := selectorHarness(t)
	ctx := context.Background()
	devs := h.exp.Devices()
	other := alloc("batch", "train-0", devs[3].UUID)
	fake.Set([]podresources.Allocation{other})
	h.exp.attr.refresh(ctx)
	sel := phaseapi.Selector{Pod: "prod/vllm-*"}
	for _, p := range []contract.Phase{contract.Idle, contract.Startup} {
		st, err := h.client.StartPhaseSelect(ctx, "lc", p, sel)
		if err != nil || !st.SelectorPending || len(st.GPUs) != 4 {
			t.Fatalf("%s: pending %v, %d GPUs, %v: want a pending run on every GPU", p, st.SelectorPending, len(st.GPUs), err)
		}
	}
	// a pod holds GPU 1 for a moment while the run waits
	fake.Set([]podresources.Allocation{other, alloc("batch", "old-0", devs[1].UUID)})
	h.exp.attr.refreshAndNotify(ctx)
	if m := fetchMetricsHandler(t, h.exp); strings.Contains(m, `joulemark_phase_energy_joules{`) {
		t.Errorf("a pending run publishes per-GPU phase energy:\n%s", m)
	}
	if _, err := h.client.StartPhaseSelect(ctx, "lc", contract.Warmup, phaseapi.Selector{Pod: "prod/other"}); !phaseapi.IsStatus(err, 409) {
		t.Errorf("another pod at the warm-up: %v", err)
	}
	fake.Set([]podresources.Allocation{other, alloc("prod", "vllm-5c8-abc", devs[1].UUID), alloc("prod", "vllm-5c8-abc", devs[2].UUID)})
	st, err := h.client.StartPhaseSelect(ctx, "lc", contract.Warmup, sel) // the exporter reads the kubelet again first
	if err != nil {
		t.Fatal(err)
	}
	if got := uuidsOf(st.GPUs); st.SelectorPending || st.Selector.Pod != "prod/vllm-5c8-abc" || !slices.Equal(got, []string{devs[1].UUID, devs[2].UUID}) || !slices.Equal(st.CoTenants, []string{"batch/old-0"}) {
		t.Errorf("after the warm-up: pending %v selector %+v GPUs %v co-tenants %v", st.SelectorPending, st.Selector, got, st.CoTenants)
	}
	for _, ph := range st.Phases {
		if len(ph.GPUs) != 2 {
			t.Errorf("phase %s counts %d GPUs, want the pod's 2", ph.Phase, len(ph.GPUs))
		}
	}
	// the engine stopped (scaled to 0): the release goes on without it
	fake.Set([]podresources.Allocation{other})
	h.exp.attr.refresh(ctx)
	if _, err := h.client.StartPhaseSelect(ctx, "lc", contract.Release, sel); err != nil {
		t.Errorf("release after the pod left: %v", err)
	}

	for _, p := range []contract.Phase{contract.Idle, contract.Startup} {
		if _, err := h.client.StartPhaseSelect(ctx, "never", p, sel); err != nil {
			t.Fatal(err)
		}
	}
	_, err = h.client.StartPhaseSelect(ctx, "never", contract.Warmup, sel)
	if !phaseapi.IsStatus(err, 409) || !strings.Contains(err.Error(), "batch/train-0 ("+devs[3].UUID+")") {
		t.Errorf("a warm-up without the pod: %v, want 409 naming batch/train-0", err)
	}
	if st, _ := h.exp.RunStatus("never"); st.Phases[len(st.Phases)-1].Phase != contract.Startup {
		t.Errorf("the refused warm-up started: %+v", st.Phases)
	}
}
