package main

import (
	"time"

	"github.com/joulemark/joulemark/exporter"
)

// kubeletFlags configure the exporter's energy attribution to pods through
// the kubelet's PodResources API.
type kubeletFlags struct {
	PodResourcesSocket string        `name:"kubelet.pod-resources-socket" default:"${kubelet_socket}" help:"The kubelet's PodResources socket; GPU energy is attributed to the pods holding each GPU when it is present (empty: off)."`
	RefreshInterval    time.Duration `name:"kubelet.refresh-interval" default:"${kubelet_refresh_interval}" help:"How often GPU allocations are read from the kubelet."`
	GPUResources       []string      `name:"kubelet.gpu-resource" default:"${kubelet_gpu_resource}" help:"Extended resource naming GPUs (repeatable; a trailing * matches a prefix, e.g. nvidia.com/mig-*)."`
	DeviceCheckpoint   string        `hidden:"" name:"kubelet.device-checkpoint-file" default:"${kubelet_checkpoint}" help:"The kubelet's device checkpoint, mapping pod UIDs to their devices, to split a shared GPU by each process's SM utilization."`
	ProcFS             string        `name:"path.procfs" default:"${path_procfs}" help:"procfs mount point, to map GPU processes to pods through their cgroup."`
	SimAllocations     string        `name:"sim.allocations" default:"" help:"With --gpu=sim: simulated pods holding simulated GPUs, served by an in-process fake kubelet over the PodResources API, e.g. \"ns/pod-a=0,1;ns/pod-b=2\", or a file of such lines (replaces --kubelet.pod-resources-socket)."`
}

// config is the attribution to pods the flags configure.
func (k kubeletFlags) config() exporter.KubeletConfig {
	return exporter.KubeletConfig{Socket: k.PodResourcesSocket, Refresh: k.RefreshInterval, GPUResources: k.GPUResources,
		Checkpoint: k.DeviceCheckpoint, ProcFS: k.ProcFS, SimAllocations: k.SimAllocations}
}
