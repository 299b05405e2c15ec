//go:build cgo

package gpu

import (
	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

func (b *NVML) doctorVersions(r *DoctorReport) {
	r.DriverVersion, r.NVMLVersion, r.CUDAVersion = b.driver, b.version, b.cuda
}

// doctorDetails probes GPU i's power fields at GPU and module scope, reads
// its power by every method side by side, and tries the calls that need
// permissions.
func (b *NVML) doctorDetails(i int, g *DoctorGPU) {
	_ = b.use(i, func(d *nvmlDevice) error {
		b.doctorDevice(d, g)
		return nil
	})
}

// doctorDevice is doctorDetails on the opened device d.
func (b *NVML) doctorDevice(d *nvmlDevice, g *DoctorGPU) {
	d.mu.Lock()
	defer d.mu.Unlock()
	type probe struct {
		id    uint32
		name  string
		scope uint32
		label string
	}
	var probes []probe
	for _, sc := range []struct {
		id    uint32
		label string
	}{{scopeGPU, ScopeGPU}, {scopeModule, ScopeModule}} {
		probes = append(probes, probe{fieldPowerInstant, "power_instant (186)", sc.id, sc.label}, probe{fieldPowerAverage, "power_average (185)", sc.id, sc.label})
	}
	probes = append(probes, probe{fieldEnergy, "total_energy_consumption (83)", 0, ""})
	for _, p := range probes {
		fp := FieldProbe{Field: p.id, Name: p.name, Scope: p.label}
		if !b.syms[symFieldValues] {
			fp.Error = "nvmlDeviceGetFieldValues missing in this driver"
			g.Fields = append(g.Fields, fp)
			continue
		}
		fv := []nvml.FieldValue{{FieldId: p.id, ScopeId: p.scope}}
		if ret := d.h.GetFieldValues(fv); ret != nvml.SUCCESS {
			fp.Error = nvml.ErrorString(ret)
		} else if v, ok := FieldValue(fv[0]); ok {
			v /= 1000 // mW → W, mJ → J
			fp.Supported, fp.Value = true, &v
		} else {
			fp.Error = nvml.ErrorString(nvml.Return(fv[0].NvmlReturn))
		}
		g.Fields = append(g.Fields, fp)
	}
	for _, f := range g.Fields {
		if !f.Supported || f.Scope != g.PowerScope {
			continue
		}
		switch f.Field {
		case fieldPowerInstant:
			g.Readings.InstantWatts = f.Value
		case fieldPowerAverage:
			g.Readings.AverageWatts = f.Value
		}
	}
	if mw, ret := d.h.GetPowerUsage(); ret == nvml.SUCCESS {
		w := float64(mw) / 1000
		g.Readings.PowerUsageWatts = &w
	}
	switch {
	case b.syms[symClocksEventReasons]:
		g.ClockEventsAPI = symClocksEventReasons
	case b.syms[symClocksThrottleReasons]:
		g.ClockEventsAPI = symClocksThrottleReasons
	default:
		g.ClockEventsAPI = "none"
	}
	g.ProcessQuery = "ok"
	if _, ret := d.h.GetComputeRunningProcesses(); ret != nvml.SUCCESS {
		g.ProcessQuery = nvml.ErrorString(ret)
	}
}
