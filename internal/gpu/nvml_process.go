//go:build cgo

package gpu

import (
	"path/filepath"
	"slices"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// processWindow is how far back ProcessSM asks NVML for samples.
const processWindow = 2 * time.Second

// ProcessSM reads nvmlDeviceGetProcessUtilization for the last two seconds
// and averages each process's SM utilization over its samples. No process
// in the window (NVML's NOT_FOUND) is an empty list.
func (b *NVML) ProcessSM(i int) ([]ProcessSM, error) {
	var samples []nvml.ProcessUtilizationSample
	ret := nvml.SUCCESS
	err := b.use(i, func(d *nvmlDevice) error {
		since := uint64(b.clock.Now().Add(-processWindow).UnixMicro())
		samples, ret = d.h.GetProcessUtilization(since)
		return nil
	})
	if err != nil {
		return nil, err
	}
	switch ret {
	case nvml.SUCCESS:
	case nvml.ERROR_NOT_FOUND:
		return nil, nil
	default:
		return nil, nvmlErr(i, "reading per-process utilization", ret)
	}
	type acc struct{ sum, n float64 }
	by := map[uint32]*acc{}
	var order []uint32
	for _, s := range samples {
		a, ok := by[s.Pid]
		if !ok {
			a = &acc{}
			by[s.Pid] = a
			order = append(order, s.Pid)
		}
		a.sum += float64(s.SmUtil)
		a.n++
	}
	out := make([]ProcessSM, 0, len(order))
	for _, pid := range order {
		out = append(out, ProcessSM{PID: pid, SMPercent: by[pid].sum / by[pid].n})
	}
	return out, nil
}

// MIGInstances lists GPU i's MIG instances with their sizes; none when MIG
// is off or not supported.
func (b *NVML) MIGInstances(i int) ([]MIGInstance, error) {
	var out []MIGInstance
	err := b.use(i, func(d *nvmlDevice) (err error) {
		out, err = migInstances(i, d.h)
		return err
	})
	return out, err
}

func migInstances(i int, h nvml.Device) ([]MIGInstance, error) {
	cur, _, ret := h.GetMigMode()
	if ret != nvml.SUCCESS || cur != nvml.DEVICE_MIG_ENABLE {
		return nil, nil
	}
	n, ret := h.GetMaxMigDeviceCount()
	if ret != nvml.SUCCESS {
		return nil, nvmlErr(i, "counting MIG instances", ret)
	}
	var out []MIGInstance
	for k := range n {
		m, ret := h.GetMigDeviceHandleByIndex(k)
		if ret == nvml.ERROR_NOT_FOUND || ret == nvml.ERROR_INVALID_ARGUMENT {
			continue
		}
		if ret != nvml.SUCCESS {
			return nil, nvmlErr(i, "reading a MIG instance", ret)
		}
		uuid, ret := m.GetUUID()
		if ret != nvml.SUCCESS {
			return nil, nvmlErr(i, "reading a MIG instance's UUID", ret)
		}
		inst := MIGInstance{UUID: uuid, Index: k, GI: -1, CI: -1}
		if gi, ret := m.GetGpuInstanceId(); ret == nvml.SUCCESS {
			inst.GI = gi
		}
		if ci, ret := m.GetComputeInstanceId(); ret == nvml.SUCCESS {
			inst.CI = ci
		}
		if a, ret := m.GetAttributes(); ret == nvml.SUCCESS {
			inst.SMs, inst.MemoryBytes = int(a.MultiprocessorCount), a.MemorySizeMB<<20
		}
		out = append(out, inst)
	}
	return out, nil
}

// mpsServer is the name of CUDA MPS's server process. Under MPS, NVML lists
// it among the compute processes for as long as the MPS daemon keeps it,
// which outlives the engine; the engine is one of its clients.
const mpsServer = "nvidia-cuda-mps-server"

// computePIDs lists the PIDs of GPU h's compute processes, sorted: the
// compute processes less MPS servers, plus MPS clients where the driver
// lists them.
func (b *NVML) computePIDs(h nvml.Device) ([]uint32, nvml.Return) {
	procs, ret := h.GetComputeRunningProcesses()
	if ret != nvml.SUCCESS {
		return nil, ret
	}
	pids := make([]uint32, 0, len(procs))
	for _, p := range procs {
		if b.syms[symProcessName] {
			if name, r := b.lib.SystemGetProcessName(int(p.Pid)); r == nvml.SUCCESS && filepath.Base(name) == mpsServer {
				continue
			}
		}
		pids = append(pids, p.Pid)
	}
	if b.syms[symMPSProcesses] {
		if mps, r := h.GetMPSComputeRunningProcesses(); r == nvml.SUCCESS {
			for _, p := range mps {
				pids = append(pids, p.Pid)
			}
		}
	}
	slices.Sort(pids)
	return slices.Compact(pids), nvml.SUCCESS
}
