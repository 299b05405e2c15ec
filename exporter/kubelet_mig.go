package exporter

import (
	"github.com/joulemark/joulemark/internal/gpu"
	"github.com/joulemark/joulemark/internal/podresources"
)

// A MIG instance's share of its GPU is its size (SMs) over all the GPU's
// instances'. The device plugin names an instance in three forms, each
// weighed by its size: a MIG UUID ("MIG-<uuid>", found through NVML), an
// old-style id "MIG-GPU-<uuid>/<gi>/<ci>" (its GPU by UUID, the instance
// by GPU and compute instance IDs) and an index-strategy id "<gpu>:<mig
// index>". The instances are listed again at every refresh with a MIG
// allocation: a layout change that only destroys instances changes every
// share.

// anyMIG says an allocation holds a MIG instance.
func anyMIG(allocs []podresources.Allocation) bool {
	for _, al := range allocs {
		if d, err := podresources.ParseDeviceID(al.DeviceID); err == nil && d.MIG {
			return true
		}
	}
	return false
}

// migIndex finds the GPU of MIG device d and its size there; an instance
// of a known GPU that is not listed (its listing failed) weighs 1.
func (a *attributor) migIndex(d podresources.Device) (int, float64, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	i := d.Index
	match := func(in gpu.MIGInstance) bool { return in.Index == d.MIGIndex }
	switch {
	case d.Parent != "":
		var ok bool
		if i, ok = a.uuids[d.Parent]; !ok {
			return 0, 0, false
		}
		match = func(in gpu.MIGInstance) bool { return in.GI == d.GI && in.CI == d.CI }
	case d.MIGIndex < 0:
		m, ok := a.migs[d.UUID]
		return m.gpu, m.weight, ok
	}
	if i < 0 || i >= a.ngpu {
		return 0, 0, false
	}
	if i < len(a.migList) {
		for _, in := range a.migList[i] {
			if match(in) {
				return i, in.Weight(), true
			}
		}
	}
	return i, 1, true
}

// loadMIGs reads every GPU's MIG instances and their sizes from the
// backend; a GPU that is not open answers an error and lists none.
func (a *attributor) loadMIGs() {
	r, ok := a.backend.(gpu.MIGReader)
	if !ok {
		return
	}
	m := map[string]migRef{}
	list := make([][]gpu.MIGInstance, a.ngpu)
	size := make([]float64, a.ngpu)
	for i := range a.ngpu {
		insts, err := r.MIGInstances(i)
		if err != nil {
			a.log.Debug("listing MIG instances failed", "gpu", i, "err", err)
			continue
		}
		list[i] = insts
		for _, in := range insts {
			m[in.UUID] = migRef{gpu: i, weight: in.Weight()}
			size[i] += in.Weight()
		}
	}
	a.mu.Lock()
	a.migs, a.migList, a.migSize = m, list, size
	a.mu.Unlock()
}
