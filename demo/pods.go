package demo

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/joulemark/joulemark/exporter"
	"github.com/joulemark/joulemark/podresources"
)

// The simulated engine runs as this pod, holding every simulated GPU, as
// the fake kubelet tells the exporter: its tokens and the exporter's
// per-pod energy join on namespace and pod in the recording rules.
const (
	PodNamespace = "joulemark-demo"
	EnginePod    = "sim-engine-0"
	gpuResource  = "nvidia.com/gpu"
)

// engineLabels are the target labels a Kubernetes scrape of the engine pod
// adds.
func engineLabels() map[string]string {
	return map[string]string{"node": NodeLabel, "namespace": PodNamespace, "pod": EnginePod}
}

// startKubelet serves the kubelet's PodResources API in-process (a unix
// socket in a temporary directory): the engine pod holds every GPU.
func (d *demo) startKubelet() (*exporter.PodConfig, error) {
	dir, err := os.MkdirTemp("", "jmk-kubelet-")
	if err != nil {
		return nil, fmt.Errorf("fake kubelet: %w", err)
	}
	d.onClose(func() error { return os.RemoveAll(dir) })
	fake, err := podresources.NewFake(filepath.Join(dir, "kubelet.sock"))
	if err != nil {
		return nil, err
	}
	d.onClose(fake.Close)
	var allocs []podresources.Allocation
	for _, dev := range d.sim.Devices() {
		allocs = append(allocs, podresources.Allocation{Namespace: PodNamespace, Pod: EnginePod, Container: "engine", Resource: gpuResource, DeviceID: dev.UUID})
	}
	fake.Set(allocs)
	cli, err := podresources.Dial(fake.Socket(), []string{gpuResource}, 5*time.Second)
	if err != nil {
		return nil, err
	}
	d.onClose(cli.Close)
	return &exporter.PodConfig{Lister: cli, Refresh: time.Second}, nil
}
