package phaseapi

import (
	"fmt"
	"strings"
)

// ParsePodPattern checks a pod selector: "namespace/name" names one pod,
// "namespace/prefix*" the one pod whose name starts with prefix (a
// Deployment's pods carry random suffixes). The exporter resolves it
// against the pods holding its GPUs.
func ParsePodPattern(s string) (namespace, name string, prefix bool, err error) {
	ns, name, ok := strings.Cut(s, "/")
	name, prefix = strings.CutSuffix(name, "*")
	if !ok || ns == "" || name == "" || strings.Contains(name, "/") || strings.ContainsAny(ns+name, "*") {
		return "", "", false, fmt.Errorf("pod %q: want namespace/name or namespace/name-prefix*", s)
	}
	return ns, name, prefix, nil
}

// MatchPod says whether pod ("namespace/name") matches pattern (see
// ParsePodPattern); an invalid pattern matches nothing.
func MatchPod(pattern, pod string) bool {
	ns, name, prefix, err := ParsePodPattern(pattern)
	if err != nil {
		return false
	}
	pns, pname, _ := strings.Cut(pod, "/")
	if pns != ns {
		return false
	}
	if prefix {
		return strings.HasPrefix(pname, name)
	}
	return pname == name
}

// DescribePods lists pods and their GPUs on one line: "ns/a (GPU-1,
// GPU-2); ns/b (GPU-3)", or "none".
func DescribePods(pods []PodGPUs) string {
	if len(pods) == 0 {
		return "none"
	}
	parts := make([]string, len(pods))
	for i, p := range pods {
		parts[i] = p.Pod + " (" + strings.Join(p.GPUs, ", ") + ")"
	}
	return strings.Join(parts, "; ")
}
