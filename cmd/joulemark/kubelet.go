package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/joulemark/joulemark/exporter"
	"github.com/joulemark/joulemark/internal/gpu"
	"github.com/joulemark/joulemark/internal/podresources"
)

// kubeletFlags configure the exporter's energy attribution to pods through
// the kubelet's PodResources API.
type kubeletFlags struct {
	PodResourcesSocket string        `name:"kubelet.pod-resources-socket" default:"/var/lib/kubelet/pod-resources/kubelet.sock" help:"The kubelet's PodResources socket; GPU energy is attributed to the pods holding each GPU when it is present (empty: off)."`
	RefreshInterval    time.Duration `name:"kubelet.refresh-interval" default:"5s" help:"How often GPU allocations are read from the kubelet."`
	GPUResources       []string      `name:"kubelet.gpu-resource" default:"nvidia.com/gpu" help:"Extended resource naming GPUs (repeatable; a trailing * matches a prefix, e.g. nvidia.com/mig-*)."`
	DeviceCheckpoint   string        `hidden:"" name:"kubelet.device-checkpoint-file" default:"/var/lib/kubelet/device-plugins/kubelet_internal_checkpoint" help:"The kubelet's device checkpoint, mapping pod UIDs to their devices, to split a shared GPU by each process's SM utilization."`
	ProcFS             string        `name:"path.procfs" default:"/proc" help:"procfs mount point, to map GPU processes to pods through their cgroup."`
	SimAllocations     string        `name:"sim.allocations" default:"" help:"With --gpu=sim: simulated pods holding simulated GPUs, served by an in-process fake kubelet over the PodResources API, e.g. \"ns/pod-a=0,1;ns/pod-b=2\", or a file of such lines (replaces --kubelet.pod-resources-socket)."`
}

// podConfig dials the kubelet socket, or with --sim.allocations starts a
// fake kubelet on a temporary socket; nil when attribution is off.
func (k kubeletFlags) podConfig(backend string, devs []gpu.Device) (*exporter.PodConfig, func(), error) {
	if k.SimAllocations != "" {
		return k.simKubelet(backend, devs)
	}
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

// simKubelet serves --sim.allocations from an in-process fake kubelet.
func (k kubeletFlags) simKubelet(backend string, devs []gpu.Device) (*exporter.PodConfig, func(), error) {
	if backend != "sim" {
		return nil, nil, errors.New("--sim.allocations needs --gpu=sim")
	}
	pods, err := podresources.ParseSimAllocations(k.SimAllocations, len(devs))
	if err != nil {
		return nil, nil, fmt.Errorf("--sim.allocations: %w", err)
	}
	dir, err := os.MkdirTemp("", "jmk-kubelet-")
	if err != nil {
		return nil, nil, fmt.Errorf("fake kubelet: %w", err)
	}
	fake, err := podresources.NewFake(filepath.Join(dir, "kubelet.sock"))
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, nil, err
	}
	uuids := make([]string, len(devs))
	for i, d := range devs {
		uuids[i] = d.UUID
	}
	fake.Set(podresources.SimAllocations(pods, uuids))
	cli, err := podresources.Dial(fake.Socket(), []string{"nvidia.com/gpu"}, max(k.RefreshInterval, time.Second))
	if err != nil {
		_ = fake.Close()
		_ = os.RemoveAll(dir)
		return nil, nil, err
	}
	closeAll := func() {
		_ = cli.Close()
		_ = fake.Close()
		_ = os.RemoveAll(dir)
	}
	return &exporter.PodConfig{Lister: cli, Refresh: k.RefreshInterval, ProcRoot: k.ProcFS, Checkpoint: k.DeviceCheckpoint}, closeAll, nil
}

// coupleSimEngines starts a coupler per --sim.engine-url: a plain URL
// drives every simulated GPU; namespace/pod=URL drives only the GPUs that
// pod holds in --sim.allocations.
func (c *ExporterCmd) coupleSimEngines(ctx context.Context, sim *gpu.Sim, log *slog.Logger) error {
	var pods []podresources.SimPod
	for _, spec := range c.SimEngineURL {
		pod, url, scoped := strings.Cut(spec, "=")
		if !scoped || strings.Contains(pod, "://") {
			pod, url = "", spec
		}
		cp, err := gpu.NewSimCoupler(sim, url, c.Interval)
		if err != nil {
			return fmt.Errorf("--sim.engine-url %s: %w", spec, err)
		}
		if pod != "" {
			if pods == nil {
				if c.Kubelet.SimAllocations == "" {
					return fmt.Errorf("--sim.engine-url %s: a pod's engine needs --sim.allocations", spec)
				}
				if pods, err = podresources.ParseSimAllocations(c.Kubelet.SimAllocations, len(sim.Devices())); err != nil {
					return fmt.Errorf("--sim.allocations: %w", err)
				}
			}
			i := slices.IndexFunc(pods, func(p podresources.SimPod) bool { return p.Namespace+"/"+p.Pod == pod })
			if i < 0 {
				return fmt.Errorf("--sim.engine-url %s: pod %s is not in --sim.allocations", spec, pod)
			}
			if err := cp.SetGPUs(pods[i].GPUs); err != nil {
				return err
			}
		}
		cp.SetLogger(log)
		go cp.Run(ctx)
	}
	return nil
}
