// Package podresources reads which pod holds which GPU from the kubelet's
// PodResources v1 gRPC API (k8s.io/kubelet/pkg/apis/podresources/v1) on its
// unix socket, parses the device ids device plugins hand out (GPU UUIDs, MIG
// UUIDs, time-sliced replicas "UUID::N"), and maps a process to its pod
// through /proc/<pid>/cgroup and the kubelet's device checkpoint.
// Fake serves the same gRPC API for tests and the simulation.
package podresources

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	v1 "k8s.io/kubelet/pkg/apis/podresources/v1"
)

// DefaultSocket is where the kubelet serves the PodResources API.
const DefaultSocket = "/var/lib/kubelet/pod-resources/kubelet.sock"

// maxMsgSize is the largest List answer read, as the kubelet's own client.
const maxMsgSize = 16 << 20

// Allocation is one device held by one container.
type Allocation struct {
	Namespace, Pod, Container string
	// Resource is the extended resource name, e.g. nvidia.com/gpu.
	Resource string
	// DeviceID is the id as the kubelet lists it.
	DeviceID string
}

// Client lists device allocations from the kubelet.
type Client struct {
	socket    string
	resources []string
	timeout   time.Duration
	conn      *grpc.ClientConn
	cli       v1.PodResourcesListerClient
}

// Dial prepares a client of the kubelet's PodResources socket that keeps the
// devices of the given resources (exact names, or prefixes ending in "*",
// e.g. nvidia.com/mig-*). Each List waits at most timeout. The connection is
// made lazily; a socket that is missing now may appear later.
func Dial(socket string, resources []string, timeout time.Duration) (*Client, error) {
	if socket == "" {
		return nil, errors.New("podresources: no socket path")
	}
	if len(resources) == 0 {
		return nil, errors.New("podresources: no resource name to read")
	}
	conn, err := grpc.NewClient("unix://"+socket,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxMsgSize)))
	if err != nil {
		return nil, fmt.Errorf("podresources: connecting to %s: %w", socket, err)
	}
	return &Client{socket: socket, resources: resources, timeout: timeout, conn: conn, cli: v1.NewPodResourcesListerClient(conn)}, nil
}

// Socket is the socket path the client reads.
func (c *Client) Socket() string { return c.socket }

// ErrNoSocket is wrapped by List when the socket file does not exist (not a
// Kubernetes node, or the kubelet's directory is not mounted).
var ErrNoSocket = errors.New("kubelet PodResources socket not found")

// List asks the kubelet for every container's devices and returns those of
// the client's resources, sorted.
func (c *Client) List(ctx context.Context) ([]Allocation, error) {
	if _, err := os.Stat(c.socket); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%w: %s", ErrNoSocket, c.socket)
		}
		return nil, fmt.Errorf("podresources: %w", err)
	}
	if c.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.timeout)
		defer cancel()
	}
	resp, err := c.cli.List(ctx, &v1.ListPodResourcesRequest{})
	if err != nil {
		return nil, fmt.Errorf("podresources: List on %s: %w", c.socket, err)
	}
	return Flatten(resp.GetPodResources(), c.resources), nil
}

// Close closes the connection.
func (c *Client) Close() error { return c.conn.Close() }

// Flatten turns the kubelet's answer into the allocations of the given
// resources, sorted by namespace, pod, container, resource, device id.
func Flatten(pods []*v1.PodResources, resources []string) []Allocation {
	var out []Allocation
	for _, p := range pods {
		for _, c := range p.GetContainers() {
			for _, d := range c.GetDevices() {
				if !MatchResource(d.GetResourceName(), resources) {
					continue
				}
				for _, id := range d.GetDeviceIds() {
					out = append(out, Allocation{Namespace: p.GetNamespace(), Pod: p.GetName(), Container: c.GetName(), Resource: d.GetResourceName(), DeviceID: id})
				}
			}
		}
	}
	slices.SortFunc(out, func(a, b Allocation) int {
		return strings.Compare(a.Namespace+"\x00"+a.Pod+"\x00"+a.Container+"\x00"+a.Resource+"\x00"+a.DeviceID,
			b.Namespace+"\x00"+b.Pod+"\x00"+b.Container+"\x00"+b.Resource+"\x00"+b.DeviceID)
	})
	return out
}

// MatchResource says whether name is one of patterns (exact, or a prefix
// when the pattern ends in "*").
func MatchResource(name string, patterns []string) bool {
	for _, p := range patterns {
		if pre, ok := strings.CutSuffix(p, "*"); ok && strings.HasPrefix(name, pre) || p == name {
			return true
		}
	}
	return false
}

// Device is a parsed device id.
type Device struct {
	// UUID is the GPU or MIG UUID ("GPU-…", "MIG-…"), empty for an index id.
	UUID string
	// Index is the GPU index for the device plugin's index strategy ("0",
	// "1"), -1 otherwise.
	Index int
	// MIG says the id names a MIG instance, not a whole GPU.
	MIG bool
	// Parent is the GPU UUID of an old-style MIG id "MIG-GPU-<uuid>/gi/ci"
	// (GI and CI its instance IDs); new-style MIG UUIDs are resolved
	// through NVML.
	Parent string
	GI, CI int
	// MIGIndex is the MIG device index of an index-strategy MIG id
	// "<gpu>:<index>" (Index the GPU's), -1 otherwise.
	MIGIndex int
	// Replica is N of a time-sliced replica "UUID::N", -1 when not replicated.
	Replica int
}

// Shared says the device is one of several holders' parts of a GPU (a MIG
// instance or a time-sliced replica).
func (d Device) Shared() bool { return d.MIG || d.Replica >= 0 }

// ParseDeviceID parses a device id as NVIDIA's device plugin hands them out:
// "GPU-<uuid>", "MIG-<uuid>", "MIG-GPU-<uuid>/<gi>/<ci>" (old MIG ids),
// "<index>" and "<index>:<mig index>" (index strategy), each optionally
// followed by "::N" for a time-sliced replica.
func ParseDeviceID(id string) (Device, error) {
	d := Device{Index: -1, Replica: -1, GI: -1, CI: -1, MIGIndex: -1}
	base, rep, replicated := strings.Cut(id, "::")
	if replicated {
		n, err := strconv.Atoi(rep)
		if err != nil || n < 0 {
			return d, fmt.Errorf("device id %q: replica %q is not a number", id, rep)
		}
		d.Replica = n
	}
	switch {
	case strings.HasPrefix(base, "MIG-"):
		d.UUID, d.MIG = base, true
		if gpu, ok := strings.CutPrefix(base, "MIG-"); ok && strings.HasPrefix(gpu, "GPU-") {
			var err error
			if d.Parent, d.GI, d.CI, err = parseOldMIG(gpu); err != nil {
				return d, fmt.Errorf("device id %q: %w", id, err)
			}
		}
	case strings.HasPrefix(base, "GPU-"):
		d.UUID = base
	default:
		g, m, isMIG := strings.Cut(base, ":")
		n, err := strconv.Atoi(g)
		k, kerr := strconv.Atoi(m)
		if err != nil || n < 0 || isMIG && (kerr != nil || k < 0) {
			return d, fmt.Errorf("device id %q: neither a GPU-/MIG- UUID nor a GPU index (N, or N:M for a MIG device)", id)
		}
		d.Index = n
		if isMIG {
			d.MIG, d.MIGIndex = true, k
		}
	}
	if d.UUID != "" && len(d.UUID) < len("GPU-")+8 {
		return d, fmt.Errorf("device id %q: UUID too short", id)
	}
	return d, nil
}

// parseOldMIG splits an old-style MIG id's "GPU-<uuid>/<gi>/<ci>".
func parseOldMIG(s string) (parent string, gi, ci int, err error) {
	parts := strings.Split(s, "/")
	if len(parts) != 3 {
		return "", -1, -1, fmt.Errorf("old-style MIG id: want MIG-GPU-<uuid>/<gi>/<ci>")
	}
	gi, err1 := strconv.Atoi(parts[1])
	ci, err2 := strconv.Atoi(parts[2])
	if err1 != nil || err2 != nil || gi < 0 || ci < 0 {
		return "", -1, -1, fmt.Errorf("old-style MIG id: GPU instance %q or compute instance %q is not a number", parts[1], parts[2])
	}
	return parts[0], gi, ci, nil
}
