package podresources

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"sort"
	"sync"
	"time"

	"google.golang.org/grpc"
	v1 "k8s.io/kubelet/pkg/apis/podresources/v1"
)

// Fake is a kubelet serving the real PodResources v1 gRPC service on a unix
// socket, with allocations the caller sets. The simulated exporter and the
// tests use it.
type Fake struct {
	v1.UnimplementedPodResourcesListerServer

	socket string
	srv    *grpc.Server
	lis    net.Listener
	done   chan struct{}

	mu     sync.Mutex
	pods   []*v1.PodResources
	delay  time.Duration
	calls  int
	closed bool
}

// NewFake listens on socket (removing a stale socket file first) and serves
// until Close.
func NewFake(socket string) (*Fake, error) {
	if err := os.Remove(socket); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("fake kubelet: removing stale socket %s: %w", socket, err)
	}
	lis, err := net.Listen("unix", socket)
	if err != nil {
		return nil, fmt.Errorf("fake kubelet: listening on %s: %w", socket, err)
	}
	f := &Fake{socket: socket, srv: grpc.NewServer(), lis: lis, done: make(chan struct{})}
	v1.RegisterPodResourcesListerServer(f.srv, f)
	go func() {
		defer close(f.done)
		_ = f.srv.Serve(lis)
	}()
	return f, nil
}

// Socket is the path served.
func (f *Fake) Socket() string { return f.socket }

// Set replaces the allocations served: containers are grouped into pods by
// namespace and name, devices by resource.
func (f *Fake) Set(allocs []Allocation) {
	type podKey struct{ ns, name string }
	pods := map[podKey]*v1.PodResources{}
	containers := map[podKey]map[string]*v1.ContainerResources{}
	var order []podKey
	for _, a := range allocs {
		k := podKey{a.Namespace, a.Pod}
		p, ok := pods[k]
		if !ok {
			p = &v1.PodResources{Namespace: a.Namespace, Name: a.Pod}
			pods[k], containers[k] = p, map[string]*v1.ContainerResources{}
			order = append(order, k)
		}
		c, ok := containers[k][a.Container]
		if !ok {
			c = &v1.ContainerResources{Name: a.Container}
			containers[k][a.Container] = c
			p.Containers = append(p.Containers, c)
		}
		var dev *v1.ContainerDevices
		for _, d := range c.Devices {
			if d.ResourceName == a.Resource {
				dev = d
			}
		}
		if dev == nil {
			dev = &v1.ContainerDevices{ResourceName: a.Resource}
			c.Devices = append(c.Devices, dev)
		}
		dev.DeviceIds = append(dev.DeviceIds, a.DeviceID)
	}
	sort.SliceStable(order, func(i, j int) bool { return order[i].ns+"/"+order[i].name < order[j].ns+"/"+order[j].name })
	list := make([]*v1.PodResources, 0, len(order))
	for _, k := range order {
		list = append(list, pods[k])
	}
	f.mu.Lock()
	f.pods = list
	f.mu.Unlock()
}

// SetPods replaces the answer with raw PodResources (for ids and resources
// Set cannot express).
func (f *Fake) SetPods(pods []*v1.PodResources) {
	f.mu.Lock()
	f.pods = pods
	f.mu.Unlock()
}

// SetDelay makes every answer wait d (a slow kubelet).
func (f *Fake) SetDelay(d time.Duration) {
	f.mu.Lock()
	f.delay = d
	f.mu.Unlock()
}

// Calls counts the List calls answered or begun.
func (f *Fake) Calls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

// List answers the allocations set.
func (f *Fake) List(ctx context.Context, _ *v1.ListPodResourcesRequest) (*v1.ListPodResourcesResponse, error) {
	f.mu.Lock()
	f.calls++
	pods, delay := f.pods, f.delay
	f.mu.Unlock()
	if delay > 0 {
		t := time.NewTimer(delay)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-t.C:
		}
	}
	return &v1.ListPodResourcesResponse{PodResources: pods}, nil
}

// Get answers one pod's resources.
func (f *Fake) Get(_ context.Context, req *v1.GetPodResourcesRequest) (*v1.GetPodResourcesResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, p := range f.pods {
		if p.Namespace == req.PodNamespace && p.Name == req.PodName {
			return &v1.GetPodResourcesResponse{PodResources: p}, nil
		}
	}
	return nil, fmt.Errorf("pod %s/%s not found", req.PodNamespace, req.PodName)
}

// Close stops serving at once (a dying kubelet) and removes the socket.
func (f *Fake) Close() error {
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return nil
	}
	f.closed = true
	f.mu.Unlock()
	f.srv.Stop()
	<-f.done
	if err := os.Remove(f.socket); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("fake kubelet: removing %s: %w", f.socket, err)
	}
	return nil
}
