package deploy

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/joulemark/joulemark/internal/phaseapi"
)

// containerArgs are the args of a pod template's containers, by name.
func containerArgs(raw map[string]any) map[string][]string {
	out := map[string][]string{}
	for _, ps := range podSpecs(raw) {
		cs, _ := ps["containers"].([]any)
		for _, c := range cs {
			cm, _ := c.(map[string]any)
			name, _ := cm["name"].(string)
			for _, a := range asSlice(cm["args"]) {
				s, _ := a.(string)
				out[name] = append(out[name], s)
			}
		}
	}
	return out
}

func asSlice(v any) []any { s, _ := v.([]any); return s }

// flagValue is --name=VALUE among args ("" when absent).
func flagValue(args []string, name string) string {
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			return v
		}
	}
	return ""
}

// requestsGPU says a pod template's containers request a GPU.
func requestsGPU(raw map[string]any) bool {
	for _, ps := range podSpecs(raw) {
		for _, c := range asSlice(ps["containers"]) {
			cm, _ := c.(map[string]any)
			res, _ := cm["resources"].(map[string]any)
			lim, _ := res["limits"].(map[string]any)
			if lim["nvidia.com/gpu"] != nil {
				return true
			}
		}
	}
	return false
}

// TestBenchJobsMeasureOnlyTheirEngine: every Kubernetes bench Job names
// its engine's pod (--engine.pod), a pattern the exporter resolves to the
// pods of the GPU Deployment of its own install (a Deployment's pod is
// <name>-<hash>-<id>) and to no other example Deployment's; the exporter
// DaemonSet reads the kubelet's PodResources, so it knows which pod holds
// which GPU (without --engine.pod the bench would be refused in pre-flight).
func TestBenchJobsMeasureOnlyTheirEngine(t *testing.T) {
	base := loadKustomization(t, kustomizations[0])
	var allDeploys []object
	for _, dir := range kustomizations {
		for _, o := range loadKustomization(t, dir).objects {
			if o.kind == "Deployment" {
				allDeploys = append(allDeploys, o)
			}
		}
	}
	for _, o := range base.objects {
		if o.kind == "DaemonSet" && flagValue(containerArgs(o.raw)["exporter"], "kubelet.pod-resources-socket") == "" {
			t.Errorf("%s: the exporter reads no kubelet PodResources socket: it cannot resolve a bench's --engine.pod", o)
		}
	}
	jobs := 0
	for _, dir := range kustomizations[1:] {
		in := loadKustomization(t, dir)
		for _, job := range in.objects {
			if job.kind != "Job" {
				continue
			}
			jobs++
			args := containerArgs(job.raw)["bench"]
			pod := flagValue(args, "engine.pod")
			ns, _, _, err := phaseapi.ParsePodPattern(pod)
			if err != nil || ns != in.k.Namespace || flagValue(args, "gpus") != "" {
				t.Errorf("%s: --engine.pod %q (%v): want the engine's pod in namespace %s", job, pod, err, in.k.Namespace)
				continue
			}
			var engines []string
			for _, d := range allDeploys {
				example := fmt.Sprintf("%s/%s-5d8f7c9b4-x2k9p", in.k.Namespace, d.name)
				own := slices.ContainsFunc(in.objects, func(o object) bool { return o.kind == "Deployment" && o.name == d.name })
				switch match := phaseapi.MatchPod(pod, example); {
				case match && !own:
					t.Errorf("%s: --engine.pod %s also matches %s's pods (%s)", job, pod, d, example)
				case match && requestsGPU(d.raw):
					engines = append(engines, d.name)
				}
			}
			if len(engines) != 1 {
				t.Errorf("%s: --engine.pod %s matches the GPU Deployments %v of its install: want exactly its engine's", job, pod, engines)
			}
		}
	}
	if jobs != 2 {
		t.Errorf("%d bench Jobs, want the lifecycle Job and the sharded one", jobs)
	}
}

// TestComposeBenchMeasuresOnlyItsEngine: compose has no kubelet, so the
// bench counts every GPU the exporter reads: in the gpu profile the
// exporter sees exactly the engine's GPUs (one NVIDIA_VISIBLE_DEVICES, not
// all); in the sim profile one simulated engine drives every simulated GPU.
func TestComposeBenchMeasuresOnlyItsEngine(t *testing.T) {
	c := loadCompose(t)
	exp, eng := c.Services["exporter"], c.Services["engine"]
	if v := exp.Environment["NVIDIA_VISIBLE_DEVICES"]; v == "" || v == "all" || v != eng.Environment["NVIDIA_VISIBLE_DEVICES"] {
		t.Errorf("compose gpu profile: exporter NVIDIA_VISIBLE_DEVICES %q, engine %q: want the same, the engine's GPUs", v, eng.Environment["NVIDIA_VISIBLE_DEVICES"])
	}
	sim := c.Services["exporter-sim"]
	for _, a := range sim.Command {
		if v, ok := strings.CutPrefix(a, "--sim.engine-url="); ok && strings.Contains(v, "=") || strings.HasPrefix(a, "--sim.allocations") {
			t.Errorf("compose sim profile: %s: want one engine driving every simulated GPU", a)
		}
	}
	if !slices.ContainsFunc(sim.Command, func(a string) bool { return strings.HasPrefix(a, "--sim.engine-url=") }) {
		t.Error("compose sim profile: no --sim.engine-url: the simulated GPUs follow no engine")
	}
	for _, a := range c.Services["bench"].Command {
		if strings.HasPrefix(a, "--gpus") || strings.HasPrefix(a, "--engine.pod") {
			t.Errorf("compose bench: %s: the exporter reads only the engine's GPUs; a selector would refuse", a)
		}
	}
}

// TestHelmExporterKnowsPods: the chart's exporter reads the kubelet's
// PodResources by default, so a bench against it must name its engine's
// pod (pre-flight refuses a run naming none, listing the pods).
func TestHelmExporterKnowsPods(t *testing.T) {
	for _, ds := range find(renderChart(t, nil), "DaemonSet") {
		if flagValue(containerArgs(ds.raw)["exporter"], "kubelet.pod-resources-socket") == "" {
			t.Errorf("%s: the exporter reads no kubelet PodResources socket by default", ds)
		}
	}
}
