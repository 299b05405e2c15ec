package deploy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
)

// kustomizations are the Kubernetes install units; the first is the base
// the others rely on (exporters, Secrets).
var kustomizations = []string{"kubernetes", "kubernetes/bench", "kubernetes/bench-sharded"}

type kustomization struct {
	APIVersion       string   `yaml:"apiVersion"`
	Kind             string   `yaml:"kind"`
	Namespace        string   `yaml:"namespace"`
	Resources        []string `yaml:"resources"`
	GeneratorOptions struct {
		DisableNameSuffixHash bool `yaml:"disableNameSuffixHash"`
	} `yaml:"generatorOptions"`
	SecretGenerator []struct {
		Name  string   `yaml:"name"`
		Files []string `yaml:"files"`
	} `yaml:"secretGenerator"`
	Images []struct {
		Name    string `yaml:"name"`
		NewName string `yaml:"newName"`
		NewTag  string `yaml:"newTag"`
	} `yaml:"images"`
}

// object is one Kubernetes object from a manifest, with where it came from.
type object struct {
	file string
	raw  map[string]any
	kind string
	name string
}

func (o object) String() string { return fmt.Sprintf("%s %s/%s", o.file, o.kind, o.name) }

// install is what one kustomization creates.
type install struct {
	dir     string
	k       kustomization
	objects []object
	secrets map[string][]string // generated Secret -> keys
}

func loadKustomization(t *testing.T, dir string) install {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var k kustomization
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&k); err != nil {
		t.Fatalf("%s/kustomization.yaml: %v", dir, err)
	}
	if k.APIVersion != "kustomize.config.k8s.io/v1beta1" || k.Kind != "Kustomization" || k.Namespace == "" {
		t.Errorf("%s/kustomization.yaml: apiVersion %q kind %q namespace %q", dir, k.APIVersion, k.Kind, k.Namespace)
	}
	in := install{dir: dir, k: k, secrets: map[string][]string{}}
	for _, r := range k.Resources {
		p := filepath.Join(dir, r)
		b, err := os.ReadFile(p)
		if err != nil {
			t.Errorf("%s: resource %s: %v", dir, r, err)
			continue
		}
		docs, err := documents(b)
		if err != nil {
			t.Errorf("%s: %v", p, err)
			continue
		}
		for _, d := range docs {
			o := object{file: p, raw: d}
			o.kind, _ = d["kind"].(string)
			if md, ok := d["metadata"].(map[string]any); ok {
				o.name, _ = md["name"].(string)
			}
			in.objects = append(in.objects, o)
		}
	}
	// Every file of the directory is listed: nothing is left out by mistake.
	entries, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
	for _, e := range entries {
		if base := filepath.Base(e); base != "kustomization.yaml" && !slices.Contains(k.Resources, base) {
			t.Errorf("%s is not in %s/kustomization.yaml resources", e, dir)
		}
	}
	readme, _ := os.ReadFile(filepath.Join(dir, "secrets", "README.md"))
	for _, s := range k.SecretGenerator {
		for _, f := range s.Files {
			key, path, ok := strings.Cut(f, "=")
			if !ok || !strings.HasPrefix(path, "secrets/") {
				t.Errorf("%s: secret %s file %q: want key=secrets/FILE", dir, s.Name, f)
				continue
			}
			if !bytes.Contains(readme, []byte(strings.TrimPrefix(path, "secrets/"))) {
				t.Errorf("%s: secret file %s is not explained in secrets/README.md", dir, path)
			}
			in.secrets[s.Name] = append(in.secrets[s.Name], key)
		}
	}
	if len(k.SecretGenerator) > 0 && !k.GeneratorOptions.DisableNameSuffixHash {
		t.Errorf("%s: generated Secret names must be stable (generatorOptions.disableNameSuffixHash) for the bench kustomizations", dir)
	}
	return in
}

// strict decodes raw into v, refusing fields v's type does not have.
func strict(raw map[string]any, v any) error {
	b, err := json.Marshal(raw)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// world is what every install can refer to: its own objects and the base's.
type world struct {
	objects []object
	secrets map[string][]string
}

func (w world) has(kind, name string) bool {
	for _, o := range w.objects {
		if o.kind == kind && o.name == name {
			return true
		}
	}
	return false
}

// podTemplates returns every pod template of the world with its labels.
func (w world) podTemplates() []corev1.PodTemplateSpec {
	var out []corev1.PodTemplateSpec
	for _, o := range w.objects {
		switch o.kind {
		case "DaemonSet":
			var d appsv1.DaemonSet
			if strict(o.raw, &d) == nil {
				out = append(out, d.Spec.Template)
			}
		case "Deployment":
			var d appsv1.Deployment
			if strict(o.raw, &d) == nil {
				out = append(out, d.Spec.Template)
			}
		case "Job":
			var j batchv1.Job
			if strict(o.raw, &j) == nil {
				out = append(out, j.Spec.Template)
			}
		}
	}
	return out
}

func subset(sel, labels map[string]string) bool {
	if len(sel) == 0 {
		return false
	}
	for k, v := range sel {
		if labels[k] != v {
			return false
		}
	}
	return true
}

var varRef = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)

// checkPod checks a pod spec against the world: containers, volumes,
// secrets, claims, service account and $(VAR) references.
func checkPod(t reporter, where string, spec corev1.PodSpec, labels map[string]string, w world) {
	t.Helper()
	if len(spec.Containers) == 0 {
		t.Errorf("%s: no containers", where)
	}
	if len(labels) == 0 {
		t.Errorf("%s: pod template has no labels", where)
	}
	if spec.ServiceAccountName != "" && !w.has("ServiceAccount", spec.ServiceAccountName) {
		t.Errorf("%s: service account %s is not defined", where, spec.ServiceAccountName)
	}
	volumes := map[string]bool{}
	for _, v := range spec.Volumes {
		volumes[v.Name] = true
		if v.Secret != nil {
			if _, ok := w.secrets[v.Secret.SecretName]; !ok {
				t.Errorf("%s: volume %s: Secret %s is not generated", where, v.Name, v.Secret.SecretName)
			}
		}
		if v.PersistentVolumeClaim != nil && !w.has("PersistentVolumeClaim", v.PersistentVolumeClaim.ClaimName) {
			t.Errorf("%s: volume %s: claim %s is not defined", where, v.Name, v.PersistentVolumeClaim.ClaimName)
		}
	}
	for _, c := range spec.Containers {
		cw := where + " container " + c.Name
		if c.Name == "" || c.Image == "" {
			t.Errorf("%s: container needs a name and an image", cw)
		}
		env := map[string]bool{}
		for _, e := range c.Env {
			env[e.Name] = true
			if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
				ref := e.ValueFrom.SecretKeyRef
				if !slices.Contains(w.secrets[ref.Name], ref.Key) {
					t.Errorf("%s: env %s: Secret %s has no key %s", cw, e.Name, ref.Name, ref.Key)
				}
			}
		}
		for _, m := range c.VolumeMounts {
			if !volumes[m.Name] {
				t.Errorf("%s: mounts undefined volume %s", cw, m.Name)
			}
			for _, r := range varRef.FindAllStringSubmatch(m.SubPathExpr, -1) {
				if !env[r[1]] {
					t.Errorf("%s: subPathExpr uses $(%s), not in env", cw, r[1])
				}
			}
		}
		for _, a := range slices.Concat(c.Command, c.Args) {
			for _, r := range varRef.FindAllStringSubmatch(a, -1) {
				if !env[r[1]] {
					t.Errorf("%s: argument %q uses $(%s), not in env", cw, a, r[1])
				}
			}
		}
		for _, p := range []*corev1.Probe{c.ReadinessProbe, c.LivenessProbe} {
			if p != nil && p.HTTPGet != nil && p.HTTPGet.Port.StrVal != "" && !slices.ContainsFunc(c.Ports, func(cp corev1.ContainerPort) bool { return cp.Name == p.HTTPGet.Port.StrVal }) {
				t.Errorf("%s: probe port %s is not a container port", cw, p.HTTPGet.Port.StrVal)
			}
		}
	}
}

// checkObject checks one object: the fields its kind requires, strictly
// typed for built-in kinds.
func checkObject(t reporter, o object, w world) {
	t.Helper()
	api, _ := o.raw["apiVersion"].(string)
	if api == "" || o.kind == "" || o.name == "" {
		t.Errorf("%s: apiVersion, kind and metadata.name are required (have %q, %q, %q)", o.file, api, o.kind, o.name)
		return
	}
	if md, _ := o.raw["metadata"].(map[string]any); md["namespace"] != nil {
		t.Errorf("%s: metadata.namespace is set; the kustomization sets it", o)
	}
	typed := func(v any) bool {
		if err := strict(o.raw, v); err != nil {
			t.Errorf("%s: not a valid %s: %v", o, o.kind, err)
			return false
		}
		return true
	}
	switch api + " " + o.kind {
	case "v1 Namespace":
		var v corev1.Namespace
		typed(&v)
	case "v1 ServiceAccount":
		var v corev1.ServiceAccount
		typed(&v)
	case "v1 ConfigMap":
		var v corev1.ConfigMap
		if typed(&v) {
			if len(v.Data) == 0 {
				t.Errorf("%s: no data", o)
			}
			for k, d := range v.Data {
				if strings.HasSuffix(k, ".json") && !json.Valid([]byte(d)) {
					t.Errorf("%s: %s is not valid JSON", o, k)
				}
			}
		}
	case "v1 Secret":
		var v corev1.Secret
		if typed(&v) && len(v.Data)+len(v.StringData) == 0 {
			t.Errorf("%s: no data", o)
		}
	case "v1 PersistentVolumeClaim":
		var v corev1.PersistentVolumeClaim
		if typed(&v) {
			if len(v.Spec.AccessModes) == 0 || v.Spec.Resources.Requests.Storage().IsZero() {
				t.Errorf("%s: needs accessModes and resources.requests.storage", o)
			}
		}
	case "v1 Service":
		var v corev1.Service
		if typed(&v) {
			if len(v.Spec.Ports) == 0 || len(v.Spec.Selector) == 0 {
				t.Errorf("%s: needs ports and a selector", o)
			}
			var matched []corev1.PodTemplateSpec
			for _, p := range w.podTemplates() {
				if subset(v.Spec.Selector, p.Labels) {
					matched = append(matched, p)
				}
			}
			if len(matched) == 0 {
				t.Errorf("%s: selector %v matches no pod template", o, v.Spec.Selector)
			}
			for _, sp := range v.Spec.Ports {
				if name := sp.TargetPort.StrVal; name != "" {
					for _, p := range matched {
						if !slices.ContainsFunc(p.Spec.Containers, func(c corev1.Container) bool {
							return slices.ContainsFunc(c.Ports, func(cp corev1.ContainerPort) bool { return cp.Name == name })
						}) {
							t.Errorf("%s: targetPort %s is not a port of the pods it selects", o, name)
						}
					}
				}
			}
		}
	case "apps/v1 DaemonSet":
		var v appsv1.DaemonSet
		if typed(&v) {
			if v.Spec.Selector == nil || !subset(v.Spec.Selector.MatchLabels, v.Spec.Template.Labels) {
				t.Errorf("%s: selector must match the template labels", o)
			}
			checkPod(t, o.String(), v.Spec.Template.Spec, v.Spec.Template.Labels, w)
		}
	case "apps/v1 Deployment":
		var v appsv1.Deployment
		if typed(&v) {
			if v.Spec.Selector == nil || !subset(v.Spec.Selector.MatchLabels, v.Spec.Template.Labels) {
				t.Errorf("%s: selector must match the template labels", o)
			}
			checkPod(t, o.String(), v.Spec.Template.Spec, v.Spec.Template.Labels, w)
		}
	case "batch/v1 Job":
		var v batchv1.Job
		if typed(&v) {
			if rp := v.Spec.Template.Spec.RestartPolicy; rp != corev1.RestartPolicyNever && rp != corev1.RestartPolicyOnFailure {
				t.Errorf("%s: restartPolicy %q, want Never or OnFailure", o, rp)
			}
			if v.Spec.CompletionMode != nil && *v.Spec.CompletionMode == batchv1.IndexedCompletion && v.Spec.Completions == nil {
				t.Errorf("%s: an Indexed Job needs completions", o)
			}
			checkPod(t, o.String(), v.Spec.Template.Spec, v.Spec.Template.Labels, w)
		}
	case "rbac.authorization.k8s.io/v1 Role":
		var v rbacv1.Role
		if typed(&v) {
			if len(v.Rules) == 0 {
				t.Errorf("%s: no rules", o)
			}
			for _, r := range v.Rules {
				if len(r.Verbs) == 0 || len(r.Resources) == 0 || slices.Contains(r.Verbs, "*") || slices.Contains(r.Resources, "*") {
					t.Errorf("%s: rules need explicit verbs and resources, no wildcards", o)
				}
			}
		}
	case "rbac.authorization.k8s.io/v1 RoleBinding":
		var v rbacv1.RoleBinding
		if typed(&v) {
			if v.RoleRef.Kind != "Role" || !w.has("Role", v.RoleRef.Name) || len(v.Subjects) == 0 {
				t.Errorf("%s: roleRef must name a Role of this install, with subjects", o)
			}
			for _, s := range v.Subjects {
				if s.Kind == "ServiceAccount" && !w.has("ServiceAccount", s.Name) {
					t.Errorf("%s: subject %s is not defined", o, s.Name)
				}
			}
		}
	case "monitoring.coreos.com/v1 ServiceMonitor":
		spec, _ := o.raw["spec"].(map[string]any)
		sel := matchLabels(spec["selector"])
		eps, _ := spec["endpoints"].([]any)
		if len(sel) == 0 || len(eps) == 0 {
			t.Errorf("%s: needs spec.selector.matchLabels and spec.endpoints", o)
			break
		}
		var svc *corev1.Service
		for _, so := range w.objects {
			var s corev1.Service
			if so.kind == "Service" && strict(so.raw, &s) == nil && subset(sel, s.Labels) {
				svc = &s
			}
		}
		if svc == nil {
			t.Errorf("%s: selector %v matches no Service", o, sel)
			break
		}
		for _, e := range eps {
			em, _ := e.(map[string]any)
			port, _ := em["port"].(string)
			if !slices.ContainsFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool { return p.Name == port }) {
				t.Errorf("%s: endpoint port %q is not a port of Service %s", o, port, svc.Name)
			}
			if em["interval"] == nil {
				t.Errorf("%s: endpoint without interval", o)
			}
		}
	case "monitoring.coreos.com/v1 PodMonitor":
		spec, _ := o.raw["spec"].(map[string]any)
		eps, _ := spec["podMetricsEndpoints"].([]any)
		if len(matchLabels(spec["selector"])) == 0 || len(eps) == 0 {
			t.Errorf("%s: needs spec.selector.matchLabels and spec.podMetricsEndpoints", o)
		}
		for _, e := range eps {
			if em, _ := e.(map[string]any); em["port"] == nil {
				t.Errorf("%s: endpoint without port", o)
			}
		}
	case "monitoring.coreos.com/v1 PrometheusRule":
		spec, _ := o.raw["spec"].(map[string]any)
		groups, _ := spec["groups"].([]any)
		b, err := yaml.Marshal(map[string]any{"groups": groups})
		if err != nil || len(groups) == 0 {
			t.Errorf("%s: needs spec.groups", o)
			break
		}
		if err := ValidateRules(b); err != nil {
			t.Errorf("%s: spec.groups: %v", o, err)
		}
	default:
		t.Errorf("%s: kind %s %s has no check; add one", o, api, o.kind)
	}
}

func matchLabels(sel any) map[string]string {
	m, _ := sel.(map[string]any)
	ml, _ := m["matchLabels"].(map[string]any)
	out := map[string]string{}
	for k, v := range ml {
		out[k], _ = v.(string)
	}
	return out
}

func TestKubernetesObjects(t *testing.T) {
	base := loadKustomization(t, kustomizations[0])
	for _, dir := range kustomizations {
		in := loadKustomization(t, dir)
		if len(in.objects) == 0 {
			t.Errorf("%s: no objects", dir)
		}
		w := world{objects: in.objects, secrets: in.secrets}
		if dir != base.dir {
			w.objects = slices.Concat(in.objects, base.objects)
			w.secrets = base.secrets
		}
		seen := map[string]string{}
		for _, o := range in.objects {
			key := o.kind + "/" + o.name
			if prev, dup := seen[key]; dup {
				t.Errorf("%s: %s also in %s", o.file, key, prev)
			}
			seen[key] = o.file
			checkObject(t, o, w)
		}
	}
}

// TestKubernetesInstallShape holds what the manifests must contain.
func TestKubernetesInstallShape(t *testing.T) {
	base := loadKustomization(t, "kubernetes")
	find := func(in install, kind, name string) map[string]any {
		for _, o := range in.objects {
			if o.kind == kind && o.name == name {
				return o.raw
			}
		}
		t.Fatalf("%s: no %s %s", in.dir, kind, name)
		return nil
	}
	var ds appsv1.DaemonSet
	if err := strict(find(base, "DaemonSet", "joulemark-exporter"), &ds); err != nil {
		t.Fatal(err)
	}
	pod := ds.Spec.Template.Spec
	if pod.RuntimeClassName == nil || *pod.RuntimeClassName != "nvidia" || len(pod.NodeSelector) == 0 {
		t.Error("exporter DaemonSet: want runtimeClassName nvidia and a GPU node selector")
	}
	checkPodResourcesMount(t, "exporter DaemonSet", pod)
	args := strings.Join(pod.Containers[0].Args, " ")
	for _, want := range []string{"exporter", "--gpu=nvml", "--web.api-token-file=", "--web.listen-address=:9402", "--kubelet.pod-resources-socket=/var/lib/kubelet/pod-resources/"} {
		if !strings.Contains(args, want) {
			t.Errorf("exporter args %q lack %q", args, want)
		}
	}
	sm := find(base, "ServiceMonitor", "joulemark-exporter")
	if !strings.Contains(fmt.Sprint(sm["spec"]), "interval:1s") {
		t.Errorf("exporter ServiceMonitor: want a 1s interval: %v", sm["spec"])
	}
	for _, name := range []string{"prometheusrule.yaml", "dashboards-configmap.yaml"} {
		if !slices.Contains(base.k.Resources, name) {
			t.Errorf("base kustomization lacks generated %s", name)
		}
	}
	if len(base.secrets) < 2 {
		t.Errorf("base kustomization generates %d Secrets, want the exporter token and the engine API key", len(base.secrets))
	}

	var job batchv1.Job
	if err := strict(find(loadKustomization(t, "kubernetes/bench"), "Job", "joulemark-bench"), &job); err != nil {
		t.Fatal(err)
	}
	var indexed batchv1.Job
	if err := strict(find(loadKustomization(t, "kubernetes/bench-sharded"), "Job", "joulemark-bench-sharded"), &indexed); err != nil {
		t.Fatal(err)
	}
	if indexed.Spec.CompletionMode == nil || *indexed.Spec.CompletionMode != batchv1.IndexedCompletion {
		t.Error("bench-sharded: want an Indexed Job")
	}
	if !strings.Contains(strings.Join(indexed.Spec.Template.Spec.Containers[0].Args, " "), "$(JOB_COMPLETION_INDEX)") {
		t.Error("bench-sharded: the run id must carry the completion index")
	}
	for _, j := range []batchv1.Job{job, indexed} {
		args := strings.Join(j.Spec.Template.Spec.Containers[0].Args, " ")
		for _, want := range []string{"bench", "--exporter.url=", "--exporter.bearer-token-file=", "--remote-write.url=", "--target.api-key-file="} {
			if !strings.Contains(args, want) {
				t.Errorf("%s args lack %q", j.Name, want)
			}
		}
	}
}

// TestCheckObjectRejects proves the checks can fail.
func TestCheckObjectRejects(t *testing.T) {
	w := world{secrets: map[string][]string{"tok": {"token"}}}
	for _, tc := range []struct{ name, yaml string }{
		{"no name", "apiVersion: v1\nkind: ServiceAccount\nmetadata: {}\n"},
		{"unknown field", "apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: a}\nautomountToken: false\n"},
		{"namespace set", "apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: a, namespace: b}\n"},
		{"unchecked kind", "apiVersion: v1\nkind: Pod\nmetadata: {name: a}\n"},
		{"selector mismatch", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: a}\nspec:\n  selector: {matchLabels: {app: x}}\n  template:\n    metadata: {labels: {app: y}}\n    spec: {containers: [{name: c, image: i}]}\n"},
		{"undefined env ref", "apiVersion: batch/v1\nkind: Job\nmetadata: {name: a}\nspec:\n  template:\n    metadata: {labels: {app: y}}\n    spec:\n      restartPolicy: Never\n      containers: [{name: c, image: i, args: [\"--x=$(NOPE)\"]}]\n"},
		{"missing secret", "apiVersion: batch/v1\nkind: Job\nmetadata: {name: a}\nspec:\n  template:\n    metadata: {labels: {app: y}}\n    spec:\n      restartPolicy: Never\n      containers: [{name: c, image: i}]\n      volumes: [{name: v, secret: {secretName: other}}]\n"},
		{"restart always", "apiVersion: batch/v1\nkind: Job\nmetadata: {name: a}\nspec:\n  template:\n    metadata: {labels: {app: y}}\n    spec:\n      restartPolicy: Always\n      containers: [{name: c, image: i}]\n"},
		{"bad rule", "apiVersion: monitoring.coreos.com/v1\nkind: PrometheusRule\nmetadata: {name: a}\nspec:\n  groups: [{name: g, rules: [{record: x, expr: 'sum('}]}]\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			docs, err := documents([]byte(tc.yaml))
			if err != nil {
				t.Fatal(err)
			}
			o := object{file: "test.yaml", raw: docs[0]}
			o.kind, _ = docs[0]["kind"].(string)
			if md, ok := docs[0]["metadata"].(map[string]any); ok {
				o.name, _ = md["name"].(string)
			}
			var r recorder
			checkObject(&r, o, w)
			if len(r.errs) == 0 {
				t.Errorf("checkObject accepted %s", tc.name)
			}
		})
	}
}

// reporter is the part of testing.T the object checks use.
type reporter interface {
	Helper()
	Errorf(format string, args ...any)
}

// recorder collects errors instead of failing a test.
type recorder struct{ errs []string }

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

// checkPodResourcesMount: the exporter mounts the kubelet's pod-resources
// directory from the host, read-only, at the same path.
func checkPodResourcesMount(t reporter, where string, pod corev1.PodSpec) {
	t.Helper()
	vol := ""
	for _, v := range pod.Volumes {
		if v.HostPath != nil && v.HostPath.Path == "/var/lib/kubelet/pod-resources" {
			vol = v.Name
		}
	}
	if vol == "" {
		t.Errorf("%s: no hostPath volume of /var/lib/kubelet/pod-resources", where)
		return
	}
	for _, m := range pod.Containers[0].VolumeMounts {
		if m.Name == vol {
			if !m.ReadOnly || m.MountPath != "/var/lib/kubelet/pod-resources" {
				t.Errorf("%s: pod-resources mounted at %s read-only %v; want read-only at /var/lib/kubelet/pod-resources", where, m.MountPath, m.ReadOnly)
			}
			return
		}
	}
	t.Errorf("%s: pod-resources volume not mounted", where)
}
