package main

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/joulemark/joulemark/internal/gpu"
	"github.com/joulemark/joulemark/internal/stats"
)

// Facts are what the node is: driver, kernel module, modes, PID namespace.
type Facts struct {
	Backend       string            `json:"backend"`
	DriverVersion string            `json:"driver_version"`
	KernelModule  string            `json:"kernel_module"` // open, proprietary, unknown
	ModuleLine    string            `json:"module_line,omitempty"`
	PIDNamespace  *gpu.PIDNamespace `json:"pid_namespace,omitempty"`
	GPUs          []GPUFacts        `json:"gpus"`
}

// GPUFacts are one GPU's modes.
type GPUFacts struct {
	Index       int    `json:"gpu"`
	Name        string `json:"name"`
	UUID        string `json:"uuid"`
	Persistence string `json:"persistence_mode"`
	MIG         string `json:"mig_mode"`
	ComputeMode string `json:"compute_mode"`
}

func initNVML() error {
	if ret := nvml.Init(); ret != nvml.SUCCESS {
		return fmt.Errorf("nvml init: %s", nvml.ErrorString(ret))
	}
	return nil
}

func facts(sim bool, procfs string) (Facts, error) {
	f := Facts{Backend: "nvml", KernelModule: "unknown"}
	if ns, err := gpu.DetectPIDNamespace(procfs); err == nil {
		f.PIDNamespace = &ns
	}
	if sim {
		f.Backend, f.DriverVersion, f.KernelModule = "sim", "sim", "none (simulated GPUs)"
		f.GPUs = []GPUFacts{{Index: 0, Name: "Simulated GPU", Persistence: "n/a", MIG: "disabled", ComputeMode: "n/a"}}
		return f, nil
	}
	if b, err := os.ReadFile("/proc/driver/nvidia/version"); err == nil {
		line, _, _ := strings.Cut(string(b), "\n")
		f.ModuleLine = strings.TrimSpace(line)
		f.KernelModule = "proprietary"
		if strings.Contains(line, "Open Kernel Module") {
			f.KernelModule = "open"
		}
	}
	if err := initNVML(); err != nil {
		return f, err
	}
	defer nvml.Shutdown()
	f.DriverVersion, _ = nvml.SystemGetDriverVersion()
	n, ret := nvml.DeviceGetCount()
	if ret != nvml.SUCCESS {
		return f, fmt.Errorf("counting GPUs: %s", nvml.ErrorString(ret))
	}
	for i := range n {
		h, ret := nvml.DeviceGetHandleByIndex(i)
		if ret != nvml.SUCCESS {
			f.GPUs = append(f.GPUs, GPUFacts{Index: i, Name: "error: " + nvml.ErrorString(ret)})
			continue
		}
		g := GPUFacts{Index: i, Persistence: "unknown", MIG: "unsupported", ComputeMode: "unknown"}
		g.Name, _ = h.GetName()
		g.UUID, _ = h.GetUUID()
		if p, ret := h.GetPersistenceMode(); ret == nvml.SUCCESS {
			g.Persistence = map[bool]string{true: "enabled", false: "disabled"}[p == nvml.FEATURE_ENABLED]
		}
		if cur, _, ret := h.GetMigMode(); ret == nvml.SUCCESS {
			g.MIG = map[bool]string{true: "enabled", false: "disabled"}[cur == nvml.DEVICE_MIG_ENABLE]
		}
		if m, ret := h.GetComputeMode(); ret == nvml.SUCCESS {
			g.ComputeMode = fmt.Sprint(m)
		}
		f.GPUs = append(f.GPUs, g)
	}
	return f, nil
}

// Latency of one NVML call.
type Latency struct {
	Call  string  `json:"call"`
	Calls int     `json:"calls"`
	Errs  int     `json:"errors"`
	P50ms float64 `json:"p50_ms"`
	P99ms float64 `json:"p99_ms"`
	Maxms float64 `json:"max_ms"`
}

// FieldPoll is a field polled raw at one scope.
type FieldPoll struct {
	Field   string `json:"field"`
	Scope   string `json:"scope"`
	Reads   int    `json:"reads"`
	Errors  int    `json:"errors"`
	Updates int    `json:"updates"`
	// PeriodMs is the median time between changes of NVML's own timestamp
	// (or, for the counter, of its value); MinMs and MaxMs bound it.
	PeriodMs float64 `json:"update_period_ms"`
	MinMs    float64 `json:"min_ms"`
	MaxMs    float64 `json:"max_ms"`
	MeanW    float64 `json:"mean_watts,omitempty"`
}

// Poll is one GPU's raw polling.
type Poll struct {
	GPU       int         `json:"gpu"`
	Seconds   float64     `json:"seconds"`
	Fields    []FieldPoll `json:"fields"`
	CounterW  float64     `json:"counter_watts"` // counter delta over its own update span
	BiasRatio float64     `json:"instant_over_counter"`
	Latencies []Latency   `json:"latencies"`
}

type timer map[string][]float64

func (t timer) time(name string, errs map[string]int, f func() nvml.Return) nvml.Return {
	began := time.Now()
	ret := f()
	t[name] = append(t[name], time.Since(began).Seconds()*1000)
	if ret != nvml.SUCCESS && ret != nvml.ERROR_NOT_FOUND {
		errs[name]++
	}
	return ret
}

func (t timer) latencies(errs map[string]int) []Latency {
	var out []Latency
	for _, name := range slices.Sorted(maps.Keys(t)) {
		v := slices.Clone(t[name])
		slices.Sort(v)
		out = append(out, Latency{Call: name, Calls: len(v), Errs: errs[name], P50ms: stats.Percentile(v, 50), P99ms: stats.Percentile(v, 99), Maxms: v[len(v)-1]})
	}
	return out
}

func pollFields(sim bool, d, pause time.Duration) ([]Poll, error) {
	if sim {
		return pollSim(d, pause)
	}
	if err := initNVML(); err != nil {
		return nil, err
	}
	defer nvml.Shutdown()
	n, ret := nvml.DeviceGetCount()
	if ret != nvml.SUCCESS {
		return nil, fmt.Errorf("counting GPUs: %s", nvml.ErrorString(ret))
	}
	var out []Poll
	for i := range n {
		h, ret := nvml.DeviceGetHandleByIndex(i)
		if ret != nvml.SUCCESS {
			continue
		}
		out = append(out, pollGPU(i, h, d, pause))
	}
	if len(out) == 0 {
		return nil, errors.New("no GPU could be polled")
	}
	return out, nil
}

type series struct {
	name, scope string
	id, sc      uint32
	ts          []int64
	vals        []float64
	errs        int
}

// pollGPU reads fields 186 and 185 at GPU and module scope and field 83 in
// one GetFieldValues per poll, with NVML's timestamps, and times each call
// the exporter makes, every tenth poll for the slow ones.
func pollGPU(i int, h nvml.Device, d, pause time.Duration) Poll {
	ss := []*series{{name: "186 power_instant", scope: "gpu", id: nvml.FI_DEV_POWER_INSTANT, sc: 0},
		{name: "186 power_instant", scope: "module", id: nvml.FI_DEV_POWER_INSTANT, sc: 1},
		{name: "185 power_average", scope: "gpu", id: nvml.FI_DEV_POWER_AVERAGE, sc: 0},
		{name: "185 power_average", scope: "module", id: nvml.FI_DEV_POWER_AVERAGE, sc: 1},
		{name: "83 total_energy", scope: "-", id: nvml.FI_DEV_TOTAL_ENERGY_CONSUMPTION}}
	t, errs := timer{}, map[string]int{}
	began := time.Now()
	for k := 0; time.Since(began) < d; k++ {
		fv := make([]nvml.FieldValue, len(ss))
		for j, s := range ss {
			fv[j] = nvml.FieldValue{FieldId: s.id, ScopeId: s.sc}
		}
		if t.time("nvmlDeviceGetFieldValues", errs, func() nvml.Return { return h.GetFieldValues(fv) }) == nvml.SUCCESS {
			for j, s := range ss {
				v, ok := gpu.FieldValue(fv[j])
				if !ok {
					s.errs++
					continue
				}
				s.ts, s.vals = append(s.ts, fv[j].Timestamp), append(s.vals, v)
			}
		}
		t.time("nvmlDeviceGetPowerUsage", errs, func() nvml.Return { _, r := h.GetPowerUsage(); return r })
		t.time("nvmlDeviceGetTotalEnergyConsumption", errs, func() nvml.Return { _, r := h.GetTotalEnergyConsumption(); return r })
		if k%10 == 0 {
			slowCalls(h, t, errs)
		}
		time.Sleep(pause)
	}
	p := Poll{GPU: i, Seconds: time.Since(began).Seconds(), Latencies: t.latencies(errs)}
	var instant float64
	for _, s := range ss {
		fp := summarize(s)
		if s.id == nvml.FI_DEV_POWER_INSTANT && s.sc == 0 {
			instant = fp.MeanW
		}
		if s.id == nvml.FI_DEV_TOTAL_ENERGY_CONSUMPTION && len(s.ts) > 1 {
			p.CounterW = counterWatts(s)
		}
		p.Fields = append(p.Fields, fp)
	}
	if p.CounterW > 0 {
		p.BiasRatio = instant / p.CounterW
	}
	return p
}

// slowCalls times the exporter's 1 Hz and per-process calls.
func slowCalls(h nvml.Device, t timer, errs map[string]int) {
	t.time("nvmlDeviceGetMemoryInfo", errs, func() nvml.Return { _, r := h.GetMemoryInfo(); return r })
	t.time("nvmlDeviceGetUtilizationRates", errs, func() nvml.Return { _, r := h.GetUtilizationRates(); return r })
	t.time("nvmlDeviceGetTemperature", errs, func() nvml.Return { _, r := h.GetTemperature(nvml.TEMPERATURE_GPU); return r })
	t.time("nvmlDeviceGetEnforcedPowerLimit", errs, func() nvml.Return { _, r := h.GetEnforcedPowerLimit(); return r })
	t.time("nvmlDeviceGetClockInfo", errs, func() nvml.Return { _, r := h.GetClockInfo(nvml.CLOCK_SM); return r })
	t.time("nvmlDeviceGetCurrentClocksEventReasons", errs, func() nvml.Return { _, r := h.GetCurrentClocksEventReasons(); return r })
	t.time("nvmlDeviceGetComputeRunningProcesses", errs, func() nvml.Return { _, r := h.GetComputeRunningProcesses(); return r })
	t.time("nvmlDeviceGetMPSComputeRunningProcesses", errs, func() nvml.Return { _, r := h.GetMPSComputeRunningProcesses(); return r })
	t.time("nvmlDeviceGetProcessUtilization", errs, func() nvml.Return {
		_, r := h.GetProcessUtilization(uint64(time.Now().Add(-2 * time.Second).UnixMicro()))
		return r
	})
	t.time("nvmlDeviceGetMigMode", errs, func() nvml.Return { _, _, r := h.GetMigMode(); return r })
}

// summarize measures a series' update period from NVML's timestamps (the
// counter's from changes of its value: its timestamp is the read's).
func summarize(s *series) FieldPoll {
	fp := FieldPoll{Field: s.name, Scope: s.scope, Reads: len(s.ts) + s.errs, Errors: s.errs}
	var gaps []float64
	var sum float64
	for k := range s.ts {
		sum += s.vals[k]
		if k == 0 {
			continue
		}
		changed := s.ts[k] != s.ts[k-1]
		if s.id == nvml.FI_DEV_TOTAL_ENERGY_CONSUMPTION {
			changed = s.vals[k] != s.vals[k-1]
		}
		if changed {
			gaps = append(gaps, float64(s.ts[k]-lastChange(s, k))/1000)
			fp.Updates++
		}
	}
	if len(s.ts) > 0 && s.id != nvml.FI_DEV_TOTAL_ENERGY_CONSUMPTION {
		fp.MeanW = sum / float64(len(s.ts)) / 1000
	}
	if len(gaps) > 1 {
		gaps = gaps[1:] // the first change is measured from the first read, not an update
		slices.Sort(gaps)
		fp.PeriodMs, fp.MinMs, fp.MaxMs = stats.Median(gaps), gaps[0], gaps[len(gaps)-1]
	}
	return fp
}

// lastChange is the timestamp of the latest change before read k.
func lastChange(s *series, k int) int64 {
	for j := k - 1; j > 0; j-- {
		changed := s.ts[j] != s.ts[j-1]
		if s.id == nvml.FI_DEV_TOTAL_ENERGY_CONSUMPTION {
			changed = s.vals[j] != s.vals[j-1]
		}
		if changed {
			return s.ts[j]
		}
	}
	return s.ts[0]
}

// counterWatts is the counter's mean power between its first and last
// update in the window (mJ over NVML µs timestamps).
func counterWatts(s *series) float64 {
	first, last := -1, -1
	for k := 1; k < len(s.vals); k++ {
		if s.vals[k] != s.vals[k-1] {
			if first < 0 {
				first = k
			}
			last = k
		}
	}
	if first < 0 || last == first {
		return 0
	}
	return (s.vals[last] - s.vals[first]) / (float64(s.ts[last]-s.ts[first]) / 1e6) / 1000
}

// pollSim times the simulated backend's reads (no fields to poll).
func pollSim(d, pause time.Duration) ([]Poll, error) {
	s, err := gpu.NewSim(gpu.SimConfig{GPUs: 1, EnergyCounter: true, CounterPeriod: 100 * time.Millisecond})
	if err != nil {
		return nil, err
	}
	t, errs := timer{}, map[string]int{}
	began := time.Now()
	var e0, e1 float64
	var t0, t1 time.Time
	for time.Since(began) < d {
		var smp gpu.Sample
		t.time("sim Sample", errs, func() nvml.Return {
			var err error
			if smp, err = s.Sample(0); err != nil {
				return nvml.ERROR_UNKNOWN
			}
			return nvml.SUCCESS
		})
		if t0.IsZero() {
			e0, t0 = smp.EnergyJoules, smp.Time
		}
		e1, t1 = smp.EnergyJoules, smp.Time
		time.Sleep(pause)
	}
	p := Poll{GPU: 0, Seconds: time.Since(began).Seconds(), Latencies: t.latencies(errs)}
	if dt := t1.Sub(t0).Seconds(); dt > 0 {
		p.CounterW = (e1 - e0) / dt // no instant field to hold it against on sim
	}
	return []Poll{p}, nil
}

// ProcView is the GPU processes NVML lists to this process.
type ProcView struct {
	PIDNamespace string     `json:"pid_namespace"`
	PIDs         [][]uint32 `json:"pids_per_gpu"`
}

func procs(sim bool) (ProcView, error) {
	v := ProcView{}
	v.PIDNamespace, _ = os.Readlink("/proc/self/ns/pid")
	if sim {
		v.PIDs = [][]uint32{{}}
		return v, nil
	}
	if err := initNVML(); err != nil {
		return v, err
	}
	defer nvml.Shutdown()
	n, _ := nvml.DeviceGetCount()
	for i := range n {
		h, ret := nvml.DeviceGetHandleByIndex(i)
		pids := []uint32{}
		if ret == nvml.SUCCESS {
			ps, _ := h.GetComputeRunningProcesses()
			for _, p := range ps {
				pids = append(pids, p.Pid)
			}
		}
		v.PIDs = append(v.PIDs, pids)
	}
	return v, nil
}

// Counters are every GPU's raw energy counter in joules, and when they
// were read (unix seconds, the midpoint of the reads).
type Counters struct {
	Time   float64   `json:"time"`
	Joules []float64 `json:"joules"`
}

// counters reads every GPU's raw energy counter (none on sim).
func counters(sim bool) (Counters, error) {
	c := Counters{Joules: []float64{}}
	if sim {
		c.Time = unixNow()
		return c, nil
	}
	if err := initNVML(); err != nil {
		return c, err
	}
	defer nvml.Shutdown()
	n, _ := nvml.DeviceGetCount()
	began := unixNow()
	for i := range n {
		h, ret := nvml.DeviceGetHandleByIndex(i)
		if ret != nvml.SUCCESS {
			return c, fmt.Errorf("GPU %d: %s", i, nvml.ErrorString(ret))
		}
		mj, ret := h.GetTotalEnergyConsumption()
		if ret != nvml.SUCCESS {
			return c, fmt.Errorf("GPU %d counter: %s", i, nvml.ErrorString(ret))
		}
		c.Joules = append(c.Joules, float64(mj)/1000)
	}
	c.Time = (began + unixNow()) / 2
	return c, nil
}
