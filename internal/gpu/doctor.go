package gpu

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/joulemark/joulemark/internal/stats"
)

// Verdicts of a doctor check, best first.
const (
	VerdictOK   = "ok"
	VerdictInfo = "info"
	VerdictWarn = "warn"
	VerdictFail = "fail"
	VerdictSkip = "skip"
)

// DoctorOptions tune Doctor. Zero fields take the defaults noted.
type DoctorOptions struct {
	// Duration is how long each GPU's counter is polled to measure its
	// update period (default 2s).
	Duration time.Duration
	// Poll is the pause between reads while polling (default 2ms).
	Poll time.Duration
	// Interval is the exporter's sampling interval the latency is judged
	// against (default 100ms).
	Interval time.Duration
	// Clock and Sleep are injectable for tests (default the system's).
	Clock Clock
	Sleep func(time.Duration)
	// PIDNamespace, when set, is whether this process shares the host's
	// PID namespace (DetectPIDNamespace); outside it NVML's process lists
	// are blind to other containers.
	PIDNamespace *PIDNamespace
}

// Check is one doctor verdict.
type Check struct {
	Name    string `json:"name"`
	Verdict string `json:"verdict"`
	Detail  string `json:"detail"`
}

// FieldProbe is whether an NVML field answers at a scope.
type FieldProbe struct {
	Field     uint32   `json:"field"`
	Name      string   `json:"name"`
	Scope     string   `json:"scope,omitempty"`
	Supported bool     `json:"supported"`
	Value     *float64 `json:"value,omitempty"`
	Error     string   `json:"error,omitempty"`
}

// Readings are the GPU's power by each NVML method, side by side, in watts
// (nil: not available).
type Readings struct {
	InstantWatts    *float64 `json:"instant_watts"`
	AverageWatts    *float64 `json:"average_watts"`
	PowerUsageWatts *float64 `json:"power_usage_watts"`
}

// CounterMeasure is the energy counter's measured update period.
type CounterMeasure struct {
	Updates int `json:"updates"`
	// PeriodSeconds is the median time between updates; JitterSeconds
	// their standard deviation; both include the polling resolution.
	PeriodSeconds     float64 `json:"period_seconds"`
	JitterSeconds     float64 `json:"jitter_seconds"`
	MinSeconds        float64 `json:"min_seconds"`
	MaxSeconds        float64 `json:"max_seconds"`
	ResolutionSeconds float64 `json:"resolution_seconds"` // median time between polls
}

// Latency is the distribution of the fast read's duration.
type Latency struct {
	Calls      int     `json:"calls"`
	P50Seconds float64 `json:"p50_seconds"`
	P99Seconds float64 `json:"p99_seconds"`
	MaxSeconds float64 `json:"max_seconds"`
}

// DoctorGPU is what Doctor found on one GPU.
type DoctorGPU struct {
	Device
	Fields         []FieldProbe    `json:"fields,omitempty"`
	Readings       Readings        `json:"readings"`
	Counter        *CounterMeasure `json:"counter,omitempty"`
	Latency        Latency         `json:"latency"`
	ClockEventsAPI string          `json:"clock_events_api,omitempty"`
	ProcessQuery   string          `json:"process_query"` // "ok" or the NVML error
	Checks         []Check         `json:"checks"`
}

// DoctorReport is the whole diagnosis.
type DoctorReport struct {
	Backend       string        `json:"backend"`
	Time          time.Time     `json:"time"`
	DriverVersion string        `json:"driver_version"`
	NVMLVersion   string        `json:"nvml_version,omitempty"`
	CUDAVersion   string        `json:"cuda_driver_version,omitempty"`
	Checks        []Check       `json:"checks"`
	PIDNamespace  *PIDNamespace `json:"pid_namespace,omitempty"`
	GPUs          []DoctorGPU   `json:"gpus"`
	// Verdict is the worst verdict of every check.
	Verdict string `json:"verdict"`
}

// details is what a backend can tell beyond Backend: NVML's field probes,
// readings side by side, and permission problems.
type details interface {
	doctorDetails(i int, g *DoctorGPU)
	doctorVersions(r *DoctorReport)
}

// Doctor diagnoses every GPU of b: identity, what is measured and at which
// scope, readings side by side, the energy counter's update period and
// jitter, the fast read's latency, process queries; each with a verdict.
func Doctor(b Backend, opts DoctorOptions) DoctorReport {
	if opts.Duration == 0 {
		opts.Duration = 2 * time.Second
	}
	if opts.Poll == 0 {
		opts.Poll = 2 * time.Millisecond
	}
	if opts.Interval == 0 {
		opts.Interval = 100 * time.Millisecond
	}
	if opts.Clock == nil {
		opts.Clock = RealClock{}
	}
	if opts.Sleep == nil {
		opts.Sleep = time.Sleep
	}
	r := DoctorReport{Backend: "nvml", Time: opts.Clock.Now().UTC()}
	det, hasDetails := b.(details)
	if _, sim := b.(*Sim); sim {
		r.Backend = "sim"
	}
	if hasDetails {
		det.doctorVersions(&r)
	}
	for _, d := range b.Devices() {
		g := DoctorGPU{Device: d}
		if r.DriverVersion == "" {
			r.DriverVersion = d.DriverVersion
		}
		if d.Err == "" {
			if hasDetails {
				det.doctorDetails(d.Index, &g)
			}
			measure(b, d.Index, &g, opts)
			if s, err := b.SlowSample(d.Index); err == nil && g.ProcessQuery == "" {
				g.ProcessQuery = "ok"
				if s.ComputeProcesses < 0 {
					g.ProcessQuery = "not answered"
				}
			}
			if ns := opts.PIDNamespace; ns != nil && !ns.Host && g.ProcessQuery == "ok" {
				g.ProcessQuery = "answered but blind: not in the host's PID namespace"
			}
		}
		g.Checks = gpuChecks(&g, opts)
		r.GPUs = append(r.GPUs, g)
	}
	r.Checks = append(r.Checks, driverCheck(r.Backend, r.DriverVersion))
	if ns := opts.PIDNamespace; ns != nil {
		r.PIDNamespace = ns
		c := Check{Name: "pid_namespace", Verdict: VerdictOK, Detail: fmt.Sprintf("in the host's PID namespace (%s, by %s): NVML lists every GPU process", ns.Self, ns.Basis)}
		if !ns.Host {
			c.Verdict, c.Detail = VerdictWarn, ns.Why()+"; the release's process criterion is then met unverified"
		}
		r.Checks = append(r.Checks, c)
	}
	r.Verdict = VerdictOK
	for _, c := range r.Checks {
		r.Verdict = worse(r.Verdict, c.Verdict)
	}
	for _, g := range r.GPUs {
		for _, c := range g.Checks {
			r.Verdict = worse(r.Verdict, c.Verdict)
		}
	}
	return r
}

var verdictRank = map[string]int{VerdictOK: 0, VerdictSkip: 0, VerdictInfo: 0, VerdictWarn: 1, VerdictFail: 2}

func worse(a, b string) string {
	if verdictRank[b] > verdictRank[a] {
		return b
	}
	return a
}

// measure polls GPU i for opts.Duration: the read latency of every call,
// and the times its energy counter changed.
func measure(b Backend, i int, g *DoctorGPU, opts DoctorOptions) {
	var lat, polls, changes []float64
	var lastE float64
	var lastPoll, lastChange time.Time
	seen := false
	end := opts.Clock.Now().Add(opts.Duration)
	for opts.Clock.Now().Before(end) {
		began := time.Now()
		s, err := b.Sample(i)
		lat = append(lat, time.Since(began).Seconds())
		if err == nil {
			if !lastPoll.IsZero() {
				polls = append(polls, s.Time.Sub(lastPoll).Seconds())
			}
			lastPoll = s.Time
			if s.HasEnergy {
				if seen && s.EnergyJoules != lastE {
					if !lastChange.IsZero() {
						changes = append(changes, s.Time.Sub(lastChange).Seconds())
					}
					lastChange = s.Time
				}
				lastE, seen = s.EnergyJoules, true
			}
		}
		opts.Sleep(opts.Poll)
	}
	g.Latency = Latency{Calls: len(lat)}
	if len(lat) > 0 {
		slices.Sort(lat)
		g.Latency.P50Seconds, g.Latency.P99Seconds, g.Latency.MaxSeconds = stats.Percentile(lat, 50), stats.Percentile(lat, 99), lat[len(lat)-1]
	}
	if g.EnergySource == EnergyCounter {
		c := &CounterMeasure{Updates: len(changes)}
		if len(changes) > 0 {
			slices.Sort(changes)
			c.PeriodSeconds, c.MinSeconds, c.MaxSeconds = stats.Median(changes), changes[0], changes[len(changes)-1]
			c.JitterSeconds = stddev(changes)
			if len(polls) > 0 {
				c.ResolutionSeconds = stats.Median(polls)
			}
		}
		g.Counter = c
	}
	if g.Readings.InstantWatts == nil && g.Readings.AverageWatts == nil && g.Readings.PowerUsageWatts == nil {
		if s, err := b.Sample(i); err == nil {
			p := s.PowerWatts
			g.Readings.InstantWatts = &p
		}
	}
}

func stddev(xs []float64) float64 {
	if len(xs) < 2 {
		return 0
	}
	var m float64
	for _, x := range xs {
		m += x
	}
	m /= float64(len(xs))
	var v float64
	for _, x := range xs {
		v += (x - m) * (x - m)
	}
	return math.Sqrt(v / float64(len(xs)-1))
}

func ms(s float64) string { return strconv.FormatFloat(s*1000, 'f', 3, 64) + " ms" }

// gpuChecks judges one GPU.
func gpuChecks(g *DoctorGPU, opts DoctorOptions) []Check {
	if g.Err != "" {
		return []Check{{"open", VerdictFail, "the GPU could not be opened: " + g.Err + " (the exporter lists it with joulemark_gpu_up 0 and retries)"}}
	}
	var cs []Check
	add := func(name, verdict, format string, args ...any) {
		cs = append(cs, Check{name, verdict, fmt.Sprintf(format, args...)})
	}
	switch g.PowerSource {
	case PowerInstant, PowerSim:
		add("power_source", VerdictOK, "%s power", g.PowerSource)
	default:
		add("power_source", VerdictWarn, "only a ~1 s average power: phase boundaries and short bursts blur by about 1 s")
	}
	if g.EnergySource == EnergyCounter {
		add("energy_counter", VerdictOK, "the GPU's energy counter is read")
	} else {
		add("energy_counter", VerdictWarn, "no usable energy counter: energy is integrated from the power samples")
	}
	if g.PowerScope == ScopeModule || g.EnergyScope == ScopeModule {
		add("scope", VerdictWarn, "power %s, energy %s: the module includes the Grace CPU and its memory (reports say \"GPU module incl. CPU\")", g.PowerScope, g.EnergyScope)
	} else {
		add("scope", VerdictOK, "power and energy of the GPU board")
	}
	if g.MIGMode == MIGEnabled {
		add("mig", VerdictWarn, "MIG enabled: power and the energy counter cover the whole GPU, utilization is not reported; attribute per instance elsewhere")
	} else {
		add("mig", VerdictOK, "MIG %s", g.MIGMode)
	}
	switch c := g.Counter; {
	case c == nil:
		add("counter_period", VerdictSkip, "no energy counter")
	case c.Updates == 0:
		add("counter_period", VerdictWarn, "the counter did not change in %v", opts.Duration)
	case c.JitterSeconds > 0.2*c.PeriodSeconds:
		add("counter_period", VerdictWarn, "updates every %s (jitter %s, %d updates, polled every %s): irregular", ms(c.PeriodSeconds), ms(c.JitterSeconds), c.Updates, ms(c.ResolutionSeconds))
	default:
		add("counter_period", VerdictOK, "updates every %s (jitter %s, min %s, max %s, %d updates, polled every %s)", ms(c.PeriodSeconds), ms(c.JitterSeconds), ms(c.MinSeconds), ms(c.MaxSeconds), c.Updates, ms(c.ResolutionSeconds))
	}
	l, iv := g.Latency, opts.Interval.Seconds()
	switch {
	case l.Calls == 0:
		add("call_latency", VerdictFail, "no read completed")
	case l.P99Seconds < 0.1*iv:
		add("call_latency", VerdictOK, "fast read p50 %s, p99 %s, max %s over %d calls", ms(l.P50Seconds), ms(l.P99Seconds), ms(l.MaxSeconds), l.Calls)
	case l.P99Seconds < 0.5*iv:
		add("call_latency", VerdictWarn, "fast read p99 %s is over a tenth of the %v interval", ms(l.P99Seconds), opts.Interval)
	default:
		add("call_latency", VerdictFail, "fast read p99 %s: the %v interval cannot be kept", ms(l.P99Seconds), opts.Interval)
	}
	if g.ProcessQuery == "ok" {
		add("process_query", VerdictOK, "compute processes readable")
	} else {
		add("process_query", VerdictWarn, "compute processes not readable (%s): run the exporter as a user that can query processes (root, or with the GPU device files); idle checks and release per the method need it (else the release's process criterion is met unverified; --release.require-engine-exit makes it wait for the bench's exit report)", g.ProcessQuery)
	}
	switch g.ClockEventsAPI {
	case "", "nvmlDeviceGetCurrentClocksEventReasons":
		if g.ClockEventsAPI != "" {
			add("clock_events", VerdictOK, "%s", g.ClockEventsAPI)
		}
	case "none":
		add("clock_events", VerdictWarn, "neither clocks-event nor throttle reasons in this driver: joulemark_gpu_clock_event_active omitted")
	default:
		add("clock_events", VerdictInfo, "driver before R535: using %s", g.ClockEventsAPI)
	}
	if c, ok := powerUsageScopeCheck(g); ok {
		cs = append(cs, c)
	}
	rd := g.Readings
	if rd.InstantWatts != nil && rd.AverageWatts != nil && rd.PowerUsageWatts != nil {
		add("readings", VerdictInfo, "instant %.1f W, average %.1f W, GetPowerUsage %.1f W", *rd.InstantWatts, *rd.AverageWatts, *rd.PowerUsageWatts)
	}
	return cs
}

// powerUsageScopeCheck tells which scope nvmlDeviceGetPowerUsage reads,
// where field 185 answers at both scopes with values far enough apart
// (over 5%) to tell: the exporter takes it as GPU scope (NVML's
// documentation) when it falls back to it, so a module reading is a
// warning. ok is false where it cannot be told.
func powerUsageScopeCheck(g *DoctorGPU) (Check, bool) {
	var gpuW, modW *float64
	for _, f := range g.Fields {
		if f.Field != 185 || !f.Supported { // field 185: 1 s average power
			continue
		}
		switch f.Scope {
		case ScopeGPU:
			gpuW = f.Value
		case ScopeModule:
			modW = f.Value
		}
	}
	pu := g.Readings.PowerUsageWatts
	if gpuW == nil || modW == nil || pu == nil || math.Abs(*modW-*gpuW) <= 0.05*math.Max(*gpuW, *modW) {
		return Check{}, false
	}
	if math.Abs(*pu-*modW) < math.Abs(*pu-*gpuW) {
		return Check{"power_usage_scope", VerdictWarn, fmt.Sprintf("nvmlDeviceGetPowerUsage reads %.1f W, the module's (field 185: module %.1f W, GPU %.1f W); the exporter takes it as GPU scope where it falls back to it (no field values)", *pu, *modW, *gpuW)}, true
	}
	return Check{"power_usage_scope", VerdictOK, fmt.Sprintf("nvmlDeviceGetPowerUsage reads %.1f W, the GPU's, as NVML documents (field 185: GPU %.1f W, module %.1f W)", *pu, *gpuW, *modW)}, true
}

// driverCheck judges the driver version against the supported range
// (R470 and later; R535 and later without fallbacks).
func driverCheck(backend, version string) Check {
	if backend == "sim" {
		return Check{"driver", VerdictOK, "simulated GPUs"}
	}
	major, err := strconv.Atoi(strings.SplitN(version, ".", 2)[0])
	switch {
	case err != nil:
		return Check{"driver", VerdictWarn, fmt.Sprintf("driver version %q not understood", version)}
	case major >= 535:
		return Check{"driver", VerdictOK, fmt.Sprintf("driver %s (R535 or later: every call joulemark uses)", version)}
	case major >= 470:
		return Check{"driver", VerdictWarn, fmt.Sprintf("driver %s: supported with fallbacks (R470–R534: throttle reasons under their older name; fields 185/186 may be missing)", version)}
	}
	return Check{"driver", VerdictFail, fmt.Sprintf("driver %s is older than R470, the oldest joulemark supports", version)}
}
