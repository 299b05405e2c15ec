package main

import (
	"time"

	"github.com/joulemark/joulemark/exporter"
	"github.com/joulemark/joulemark/podresources"
)

// kubeletFlags configure the exporter's energy attribution to pods through
// the kubelet's PodResources API.
type kubeletFlags struct {
	PodResourcesSocket string        `name:"kubelet.pod-resources-socket" default:"/var/lib/kubelet/pod-resources/kubelet.sock" help:"The kubelet's PodResources socket; GPU energy is attributed to the pods holding each GPU when it is present (empty: off)."`
	RefreshInterval    time.Duration `name:"kubelet.refresh-interval" default:"5s" help:"How often GPU allocations are read from the kubelet."`
	GPUResources       []string      `name:"kubelet.gpu-resource" default:"nvidia.com/gpu" help:"Extended resource naming GPUs (repeatable; a trailing * matches a prefix, e.g. nvidia.com/mig-*)."`
	DeviceCheckpoint   string        `name:"kubelet.device-checkpoint-file" default:"/var/lib/kubelet/device-plugins/kubelet_internal_checkpoint" help:"The kubelet's device checkpoint, mapping pod UIDs to their devices, to split a shared GPU by each process's SM utilization."`
	ProcFS             string        `name:"path.procfs" default:"/proc" help:"procfs mount point, to map GPU processes to pods through their cgroup."`
}

// podConfig dials the kubelet socket; nil when attribution is off.
func (k kubeletFlags) podConfig() (*exporter.PodConfig, func(), error) {
	if k.PodResourcesSocket == "" {
		return nil, func() {}, nil
	}
	cli, err := podresources.Dial(k.PodResourcesSocket, k.GPUResources, max(k.RefreshInterval, time.Second))
	if err != nil {
		return nil, nil, err
	}
	return &exporter.PodConfig{Lister: cli, Refresh: k.RefreshInterval, ProcRoot: k.ProcFS, Checkpoint: k.DeviceCheckpoint},
		func() { _ = cli.Close() }, nil
}
