package deploy

import (
	"fmt"
	"io"
	"log"
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

const chartDir = "helm/joulemark"

// quietHelm silences the standard logger for the test: Helm's loader logs
// every symbolic link it follows (files/rules and files/dashboards link to
// the repository's rules/ and dashboards/ on purpose).
func quietHelm(t *testing.T) {
	prev := log.Writer()
	log.SetOutput(io.Discard)
	t.Cleanup(func() { log.SetOutput(prev) })
}

// helmValueSets are the value sets the chart is rendered with: the
// defaults, a minimal install (no pod attribution, no Prometheus Operator
// objects, an existing token Secret), and a customised one.
var helmValueSets = []struct {
	name     string
	values   map[string]any
	external map[string][]string // Secrets the installer provides
	claims   []string            // PersistentVolumeClaims the installer provides
}{
	{"default", map[string]any{}, nil, nil},
	{"minimal", map[string]any{
		"podResources":   map[string]any{"enabled": false},
		"serviceMonitor": map[string]any{"enabled": false},
		"prometheusRule": map[string]any{"enabled": false},
		"dashboards":     map[string]any{"enabled": false},
		"exporter": map[string]any{"apiToken": map[string]any{"existingSecret": "my-token"},
			"storage": map[string]any{"volume": map[string]any{"persistentVolumeClaim": map[string]any{"claimName": "joulemark-state"}}}},
		"enginePodMonitor": map[string]any{"enabled": false},
	}, map[string][]string{"my-token": {"token"}}, []string{"joulemark-state"}},
	{"custom", map[string]any{
		"image":             map[string]any{"tag": "v1.2.3"},
		"runtimeClassName":  "",
		"nodeSelector":      map[string]any{"gpu": "h200"},
		"tolerations":       []any{map[string]any{"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}},
		"prometheusRelease": "kps",
		"webConfig":         map[string]any{"enabled": true, "config": map[string]any{"basic_auth_users": map[string]any{"prometheus": "$2y$10$abc"}}},
		"exporter":          map[string]any{"apiToken": map[string]any{"value": "s3cret"}, "extraArgs": []any{"--run.max-kept=50"}, "hostPID": true},
		"podResources":      map[string]any{"processSplit": false, "gpuResources": []any{"nvidia.com/gpu", "nvidia.com/mig-*"}},
	}, nil, nil},
}

// renderChart renders the chart with values as `helm install` would, and
// returns its objects.
func renderChart(t *testing.T, values map[string]any) []object {
	t.Helper()
	quietHelm(t)
	ch, err := loader.Load(chartDir)
	if err != nil {
		t.Fatalf("loading %s: %v", chartDir, err)
	}
	vals, err := chartutil.ToRenderValues(ch, values, chartutil.ReleaseOptions{Name: "jm", Namespace: "joulemark", IsInstall: true, Revision: 1}, chartutil.DefaultCapabilities)
	if err != nil {
		t.Fatal(err)
	}
	out, err := engine.Render(ch, vals)
	if err != nil {
		t.Fatalf("rendering: %v", err)
	}
	var objs []object
	for _, name := range slices.Sorted(maps.Keys(out)) {
		if !strings.HasSuffix(name, ".yaml") || strings.TrimSpace(out[name]) == "" {
			continue
		}
		docs, err := documents([]byte(out[name]))
		if err != nil {
			t.Fatalf("%s: %v\n%s", name, err, out[name])
		}
		for _, d := range docs {
			if len(d) == 0 {
				continue
			}
			kind, _ := d["kind"].(string)
			md, _ := d["metadata"].(map[string]any)
			n, _ := md["name"].(string)
			objs = append(objs, object{file: filepath.Base(name), raw: d, kind: kind, name: n})
		}
	}
	return objs
}

// TestHelmChartLint runs Helm's linter on every value set.
func TestHelmChartLint(t *testing.T) {
	quietHelm(t)
	for _, vs := range helmValueSets {
		l := lint.All(chartDir, vs.values, "joulemark", false)
		for _, m := range l.Messages {
			if m.Severity > support.InfoSev {
				t.Errorf("%s: helm lint: %s", vs.name, m)
			}
		}
	}
}

// TestHelmChartObjects renders every value set and holds the objects to the
// checks of the kustomize manifests (strict k8s.io/api decoding and
// cross-references), plus what the values promise.
func TestHelmChartObjects(t *testing.T) {
	for _, vs := range helmValueSets {
		t.Run(vs.name, func(t *testing.T) {
			objs := renderChart(t, vs.values)
			w := world{objects: objs, secrets: map[string][]string{}}
			for _, c := range vs.claims {
				w.objects = append(w.objects, object{file: "(installer)", kind: "PersistentVolumeClaim", name: c})
			}
			maps.Copy(w.secrets, vs.external)
			for _, o := range objs {
				if o.kind == "Secret" {
					for _, k := range []string{"data", "stringData"} {
						m, _ := o.raw[k].(map[string]any)
						w.secrets[o.name] = append(w.secrets[o.name], slices.Collect(maps.Keys(m))...)
					}
				}
			}
			seen := map[string]bool{}
			for _, o := range objs {
				if seen[o.kind+"/"+o.name] {
					t.Errorf("%s twice", o)
				}
				seen[o.kind+"/"+o.name] = true
				checkObject(t, o, w)
			}
			checkHelmValues(t, vs.name, vs.values, objs)
		})
	}
}

func find(objs []object, kind string) []object {
	var out []object
	for _, o := range objs {
		if o.kind == kind {
			out = append(out, o)
		}
	}
	return out
}

func checkHelmValues(t *testing.T, name string, values map[string]any, objs []object) {
	ds := find(objs, "DaemonSet")
	if len(ds) != 1 {
		t.Fatalf("%d DaemonSets", len(ds))
	}
	var d appsv1.DaemonSet
	if err := strict(ds[0].raw, &d); err != nil {
		t.Fatal(err)
	}
	pod := d.Spec.Template.Spec
	args := strings.Join(pod.Containers[0].Args, " ")
	kinds := map[string]int{}
	for _, o := range objs {
		kinds[o.kind]++
	}
	switch name {
	case "default":
		checkPodResourcesMount(t, "default DaemonSet", pod)
		if v := volume(pod, "exporter-data"); v == nil || v.HostPath == nil || v.HostPath.Path != "/var/lib/joulemark" {
			t.Errorf("exporter state on %+v, want the node's /var/lib/joulemark: it must survive a restart", v)
		}
		if kinds["PodMonitor"] != 1 {
			t.Errorf("objects %v: want the engine PodMonitor", kinds)
		}
		if pod.RuntimeClassName == nil || *pod.RuntimeClassName != "nvidia" || pod.NodeSelector["nvidia.com/gpu.present"] != "true" || len(pod.Tolerations) != 1 {
			t.Errorf("default runtime class, node selector, tolerations: %v %v %v", pod.RuntimeClassName, pod.NodeSelector, pod.Tolerations)
		}
		for _, want := range []string{"--kubelet.pod-resources-socket=/var/lib/kubelet/pod-resources/kubelet.sock", "--path.procfs=/host/proc", "--kubelet.gpu-resource=nvidia.com/gpu"} {
			if !strings.Contains(args, want) {
				t.Errorf("args %q lack %q", args, want)
			}
		}
		if strings.Contains(args, "--web.api-token-file") {
			t.Error("no token given, yet --web.api-token-file")
		}
		if pod.HostPID {
			t.Error("hostPID by default: it is opt-in (exporter.hostPID)")
		}
		if kinds["ServiceMonitor"] != 1 || kinds["PrometheusRule"] != 1 || kinds["ConfigMap"] != 1 {
			t.Errorf("objects %v: want a ServiceMonitor, a PrometheusRule and the dashboards", kinds)
		}
		for _, o := range objs {
			if md, _ := o.raw["metadata"].(map[string]any); fmt.Sprint(md["labels"]) != "" && strings.Contains(fmt.Sprint(md["labels"]), "release:") {
				t.Errorf("%s: a release label without prometheusRelease", o)
			}
		}
		cm := find(objs, "ConfigMap")[0]
		var c corev1.ConfigMap
		if err := strict(cm.raw, &c); err != nil {
			t.Fatal(err)
		}
		if c.Labels["grafana_dashboard"] != "1" || len(c.Data) != 3 || !strings.Contains(c.Data["fleet-energy.json"], "joulemark-fleet") {
			t.Errorf("dashboards ConfigMap: labels %v, %d dashboards", c.Labels, len(c.Data))
		}
		rule := find(objs, "PrometheusRule")[0]
		if s := fmt.Sprint(rule.raw["spec"]); !strings.Contains(s, "namespace_pod:joulemark_joules_per_generation_token:ratio_rate5m") || !strings.Contains(s, "JoulemarkExporterDown") {
			t.Error("PrometheusRule lacks the recording or alerting rules")
		}
		if pod.SecurityContext.RunAsUser == nil || *pod.SecurityContext.RunAsUser != 0 || pod.Containers[0].SecurityContext.Capabilities == nil {
			t.Error("with pod resources: root without capabilities")
		}
	case "minimal":
		for _, v := range pod.Volumes {
			if v.HostPath != nil && v.Name != "exporter-data" {
				t.Errorf("pod resources off, yet hostPath volume %s", v.Name)
			}
		}
		if !strings.Contains(args, "--kubelet.pod-resources-socket= ") && !strings.HasSuffix(args, "--kubelet.pod-resources-socket=") || !strings.Contains(args, "--web.api-token-file=") {
			t.Errorf("args %q: want the kubelet off and the token file", args)
		}
		if v := volume(pod, "exporter-data"); v == nil || v.PersistentVolumeClaim == nil || v.PersistentVolumeClaim.ClaimName != "joulemark-state" {
			t.Errorf("exporter state on %+v, want the claim joulemark-state", v)
		} else if m := pod.Containers[0].VolumeMounts; !slices.ContainsFunc(m, func(m corev1.VolumeMount) bool {
			return m.Name == "exporter-data" && m.SubPathExpr == "$(NODE_NAME)"
		}) {
			t.Errorf("a shared state volume needs one sub-directory per node: mounts %+v", m)
		}
		if kinds["ServiceMonitor"]+kinds["PrometheusRule"]+kinds["ConfigMap"]+kinds["Secret"]+kinds["PodMonitor"] != 0 {
			t.Errorf("objects %v: want none of the optional ones", kinds)
		}
		if pod.SecurityContext.RunAsNonRoot == nil || !*pod.SecurityContext.RunAsNonRoot {
			t.Error("without pod resources the exporter must run as non-root")
		}
	case "custom":
		if got := pod.Containers[0].Image; got != "ghcr.io/joulemark/joulemark:v1.2.3" {
			t.Errorf("image %s", got)
		}
		if pod.RuntimeClassName != nil || pod.NodeSelector["gpu"] != "h200" || len(pod.Tolerations) != 1 || pod.Tolerations[0].Key != "dedicated" {
			t.Errorf("runtime class, node selector, tolerations: %v %v %v", pod.RuntimeClassName, pod.NodeSelector, pod.Tolerations)
		}
		for _, want := range []string{"--web.config.file=", "--web.api-token-file=", "--run.max-kept=50", "--kubelet.gpu-resource=nvidia.com/mig-*"} {
			if !strings.Contains(args, want) {
				t.Errorf("args %q lack %q", args, want)
			}
		}
		if strings.Contains(args, "--path.procfs") {
			t.Error("processSplit off, yet --path.procfs")
		}
		if !pod.HostPID {
			t.Error("exporter.hostPID true, yet no hostPID")
		}
		checkPodResourcesMount(t, "custom DaemonSet", pod)
		for _, k := range []string{"ServiceMonitor", "PrometheusRule"} {
			o := find(objs, k)[0]
			md, _ := o.raw["metadata"].(map[string]any)
			if l, _ := md["labels"].(map[string]any); l["release"] != "kps" {
				t.Errorf("%s: release label %v, want kps", o, l["release"])
			}
		}
		if kinds["Secret"] != 2 {
			t.Errorf("%d Secrets, want the token and the web config", kinds["Secret"])
		}
	}
}

// volume returns the pod's volume called name, nil when none.
func volume(pod corev1.PodSpec, name string) *corev1.Volume {
	for i := range pod.Volumes {
		if pod.Volumes[i].Name == name {
			return &pod.Volumes[i]
		}
	}
	return nil
}

// TestHelmImagePinned: the image defaults to the chart's appVersion, a
// release version (never a moving tag such as latest).
func TestHelmImagePinned(t *testing.T) {
	quietHelm(t)
	ch, err := loader.Load(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	app := ch.Metadata.AppVersion
	if !regexp.MustCompile(`^[0-9]+\.[0-9]+\.[0-9]+$`).MatchString(app) {
		t.Errorf("Chart.yaml appVersion %q is not a release version (MAJOR.MINOR.PATCH)", app)
	}
	ds := find(renderChart(t, map[string]any{}), "DaemonSet")
	if len(ds) != 1 {
		t.Fatalf("%d DaemonSets", len(ds))
	}
	var d appsv1.DaemonSet
	if err := strict(ds[0].raw, &d); err != nil {
		t.Fatal(err)
	}
	if img := d.Spec.Template.Spec.Containers[0].Image; img != "ghcr.io/joulemark/joulemark:"+app {
		t.Errorf("default image %s, want the appVersion %s", img, app)
	}
}
