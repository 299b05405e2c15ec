package podresources

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// DefaultCheckpoint is the kubelet's device manager checkpoint: which pod
// UID and container hold which device ids.
const DefaultCheckpoint = "/var/lib/kubelet/device-plugins/kubelet_internal_checkpoint"

// podUIDRe finds a pod UID in a cgroup path, both drivers: cgroupfs
// ".../pod1b2c…-…/<container>" and systemd ".../kubepods-burstable-pod1b2c…_…slice/…".
var podUIDRe = regexp.MustCompile(`pod([0-9a-f]{8}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{12})`)

// PodUID reads /proc/<pid>/cgroup under procRoot and returns the UID of the
// pod the process runs in; "" and no error when the process is not in a
// pod.
func PodUID(procRoot string, pid uint32) (string, error) {
	path := filepath.Join(procRoot, strconv.FormatUint(uint64(pid), 10), "cgroup")
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("reading %s: %w", path, err)
	}
	for line := range strings.Lines(string(b)) {
		if m := podUIDRe.FindStringSubmatch(line); m != nil {
			return strings.ReplaceAll(m[1], "_", "-"), nil
		}
	}
	return "", nil
}

// CheckpointEntry is one container's devices of one resource in the
// kubelet's device checkpoint.
type CheckpointEntry struct {
	PodUID, Container, Resource string
	DeviceIDs                   []string
}

// ReadCheckpoint reads the kubelet's device manager checkpoint (JSON, the
// device ids per NUMA node since Kubernetes 1.20, a plain list before).
func ReadCheckpoint(path string) ([]CheckpointEntry, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the kubelet device checkpoint %s: %w", path, err)
	}
	var cp struct {
		Data struct {
			PodDeviceEntries []struct {
				PodUID        string
				ContainerName string
				ResourceName  string
				DeviceIDs     json.RawMessage
			}
		}
	}
	if err := json.Unmarshal(b, &cp); err != nil {
		return nil, fmt.Errorf("decoding the kubelet device checkpoint %s: %w", path, err)
	}
	out := make([]CheckpointEntry, 0, len(cp.Data.PodDeviceEntries))
	for _, e := range cp.Data.PodDeviceEntries {
		ids, err := checkpointIDs(e.DeviceIDs)
		if err != nil {
			return nil, fmt.Errorf("decoding the kubelet device checkpoint %s: pod %s container %s: %w", path, e.PodUID, e.ContainerName, err)
		}
		out = append(out, CheckpointEntry{PodUID: e.PodUID, Container: e.ContainerName, Resource: e.ResourceName, DeviceIDs: ids})
	}
	return out, nil
}

func checkpointIDs(raw json.RawMessage) ([]string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var byNUMA map[string][]string
	if err := json.Unmarshal(raw, &byNUMA); err == nil {
		var ids []string
		for _, v := range byNUMA {
			ids = append(ids, v...)
		}
		return ids, nil
	}
	var ids []string
	if err := json.Unmarshal(raw, &ids); err != nil {
		return nil, errors.New("device ids neither per NUMA node nor a list")
	}
	return ids, nil
}

// PodRef names a pod's container.
type PodRef struct{ Namespace, Pod, Container string }

// ResolveUIDs maps pod UIDs to the namespace/name the kubelet lists, by
// joining the checkpoint and allocations on (resource, device id), which a
// device plugin hands to one container at a time.
func ResolveUIDs(cp []CheckpointEntry, allocs []Allocation) map[string][]PodRef {
	type key struct{ res, id string }
	owner := make(map[key]PodRef, len(allocs))
	for _, a := range allocs {
		owner[key{a.Resource, a.DeviceID}] = PodRef{a.Namespace, a.Pod, a.Container}
	}
	out := map[string][]PodRef{}
	for _, e := range cp {
		for _, id := range e.DeviceIDs {
			if r, ok := owner[key{e.Resource, id}]; ok {
				if !containsRef(out[e.PodUID], r) {
					out[e.PodUID] = append(out[e.PodUID], r)
				}
				break
			}
		}
	}
	return out
}

func containsRef(rs []PodRef, r PodRef) bool {
	for _, x := range rs {
		if x == r {
			return true
		}
	}
	return false
}
