package main

import (
	"fmt"
	"reflect"

	"github.com/alecthomas/kong"

	"github.com/joulemark/joulemark/exporter"
)

// Validate rejects exporter settings out of their range, a zero among
// them wherever it has no meaning (the packages would otherwise take their
// default for it: a zero --release.tolerance is not 0.05), naming the flag.
// The zeros that mean something are documented in the flags' help.
func (c *ExporterCmd) Validate(kctx *kong.Context) error {
	for _, v := range c.checks() {
		if v.bad {
			return fmt.Errorf("%s=%v: want %s", flagName(kctx, v.field), reflect.ValueOf(v.field).Elem(), v.want)
		}
	}
	return nil
}

// flagCheck is a flag's value out of range: field points to the
// ExporterCmd field, want says what is accepted.
type flagCheck struct {
	field any
	bad   bool
	want  string
}

// checks are the exporter flags' ranges.
func (c *ExporterCmd) checks() []flagCheck {
	const positive = "a duration > 0"
	k := c.Kubelet
	return []flagCheck{
		{&c.GPUs, c.GPUs < 0, "0 (all, or 8 simulated) or more"},
		{&c.Interval, c.Interval < exporter.MinInterval, "at least " + exporter.MinInterval.String()},
		{&c.Retention, c.Retention <= 0, positive},
		{&c.MaxRequests, c.MaxRequests < 0, "0 (no limit) or more"},
		{&c.ReleaseTolerance, !(c.ReleaseTolerance > 0 && c.ReleaseTolerance < 1), "0 < t < 1 (a fraction of the idle baseline)"},
		{&c.ReleaseHold, c.ReleaseHold <= 0, positive},
		{&c.ReleaseMaxWait, c.ReleaseMaxWait <= 0, positive},
		{&c.IdleCVThreshold, !(c.IdleCVThreshold > 0), "a coefficient of variation > 0"},
		{&c.MaxRuns, c.MaxRuns < 1, "at least 1"},
		{&c.SaveInterval, c.SaveInterval <= 0, positive},
		{&c.RunMaxAge, c.RunMaxAge <= 0, positive},
		{&c.RunMetricsTTL, c.RunMetricsTTL < 0, "a duration ≥ 0 (0: until --run.max-kept evicts the run)"},
		{&c.NVMLInitTimeout, c.NVMLInitTimeout < 0, "a duration ≥ 0 (0: one attempt)"},
		{&c.NVMLRetryInterval, c.NVMLRetryInterval <= 0, positive},
		{&c.Kubelet.RefreshInterval, k.RefreshInterval <= 0, positive},
		{&c.Kubelet.ProcFS, k.ProcFS == "", "a path (procfs mount point)"},
		{&c.Kubelet.DeviceCheckpoint, k.DeviceCheckpoint == "", "a path (the kubelet's device checkpoint)"},
		{&c.SimIdleWatts, !(c.SimIdleWatts > 0), "watts > 0"},
		{&c.SimMaxWatts, !(c.SimMaxWatts > 0), "watts > 0"},
		{&c.SimStartupWatts, !(c.SimStartupWatts > 0), "watts > 0"},
		{&c.SimRampSeconds, !(c.SimRampSeconds > 0), "seconds > 0"},
		{&c.SimDecaySeconds, !(c.SimDecaySeconds > 0), "seconds > 0"},
		{&c.SimPowerBias, !(c.SimPowerBias >= 0.5 && c.SimPowerBias <= 1.5), "0.5..1.5"},
	}
}

// flagName is "--name" of the flag that sets the field field points to.
func flagName(kctx *kong.Context, field any) string {
	p := reflect.ValueOf(field).Pointer()
	for _, f := range kctx.Flags() {
		if f.Target.CanAddr() && f.Target.Addr().Pointer() == p {
			return "--" + f.Name
		}
	}
	return fmt.Sprintf("(flag for %T)", field)
}
