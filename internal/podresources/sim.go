package podresources

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// SimPod is one simulated pod and the GPU indexes it holds.
type SimPod struct {
	Namespace, Pod string
	GPUs           []int
}

// ParseSimAllocations reads simulated allocations:
// "ns/pod-a=0,1;ns/pod-b=2" (pods separated by ";" or new lines, GPU
// indexes by ","; "#" starts a comment), or, when spec names an existing
// file, that file's content in the same syntax. No GPU is held twice and
// every index is below gpus.
func ParseSimAllocations(spec string, gpus int) ([]SimPod, error) {
	src := spec
	if st, err := os.Stat(spec); err == nil && !st.IsDir() {
		b, err := os.ReadFile(spec)
		if err != nil {
			return nil, fmt.Errorf("reading simulated allocations %s: %w", spec, err)
		}
		src = string(b)
	}
	held := map[int]string{}
	var out []SimPod
	for _, line := range strings.FieldsFunc(src, func(r rune) bool { return r == ';' || r == '\n' }) {
		line, _, _ = strings.Cut(line, "#")
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		name, list, ok := strings.Cut(line, "=")
		ns, pod, okName := strings.Cut(strings.TrimSpace(name), "/")
		if !ok || !okName || ns == "" || pod == "" || strings.Contains(pod, "/") {
			return nil, fmt.Errorf("simulated allocation %q: want namespace/pod=GPU,GPU,…", line)
		}
		p := SimPod{Namespace: ns, Pod: pod}
		for _, f := range strings.Split(list, ",") {
			i, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || i < 0 || i >= gpus {
				return nil, fmt.Errorf("simulated allocation %q: GPU %q is not an index below %d", line, strings.TrimSpace(f), gpus)
			}
			if other, dup := held[i]; dup {
				return nil, fmt.Errorf("simulated allocation %q: GPU %d is already held by %s", line, i, other)
			}
			held[i] = ns + "/" + pod
			p.GPUs = append(p.GPUs, i)
		}
		out = append(out, p)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("simulated allocations %q: no pod", spec)
	}
	return out, nil
}

// SimAllocations turns simulated pods into the allocations a kubelet lists
// (container "engine", resource nvidia.com/gpu), with the GPUs' UUIDs.
func SimAllocations(pods []SimPod, uuids []string) []Allocation {
	var out []Allocation
	for _, p := range pods {
		for _, i := range p.GPUs {
			out = append(out, Allocation{Namespace: p.Namespace, Pod: p.Pod, Container: "engine", Resource: "nvidia.com/gpu", DeviceID: uuids[i]})
		}
	}
	return out
}
