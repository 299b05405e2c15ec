package main

import (
	"fmt"
	"reflect"

	"github.com/alecthomas/kong"
)

// Validate rejects exporter settings out of their range, among them those
// exporter.Config would silently replace by its default (a zero
// --release.tolerance is not 0.05), naming the flag.
func (c *ExporterCmd) Validate(kctx *kong.Context) error {
	for _, v := range []struct {
		field any // pointer to the ExporterCmd field
		bad   bool
		want  string
	}{
		{&c.Interval, c.Interval <= 0, "at least 10ms"},
		{&c.Retention, c.Retention <= 0, "a duration > 0"},
		{&c.ReleaseTolerance, !(c.ReleaseTolerance > 0 && c.ReleaseTolerance < 1), "0 < t < 1 (a fraction of the idle baseline)"},
		{&c.ReleaseHold, c.ReleaseHold <= 0, "a duration > 0"},
		{&c.ReleaseMaxWait, c.ReleaseMaxWait <= 0, "a duration > 0"},
		{&c.IdleCVThreshold, !(c.IdleCVThreshold > 0), "a coefficient of variation > 0"},
		{&c.MaxRuns, c.MaxRuns < 1, "at least 1"},
		{&c.RunMaxAge, c.RunMaxAge <= 0, "a duration > 0"},
		{&c.RunMetricsTTL, c.RunMetricsTTL <= 0, "a duration > 0 (long enough for Prometheus to scrape a run's final values)"},
	} {
		if v.bad {
			return fmt.Errorf("%s=%v: want %s", flagName(kctx, v.field), reflect.ValueOf(v.field).Elem(), v.want)
		}
	}
	return nil
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
