package main

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/alecthomas/kong"

	"github.com/joulemark/joulemark/demo"
	"github.com/joulemark/joulemark/internal/simengine"
)

// The flag defaults are the packages' defaults: no drift between the two.
func TestSimEngineFlagDefaults(t *testing.T) {
	got := parseCLI(t, "sim-engine").SimEngine.Config()
	if want := simengine.DefaultConfig(); got != want {
		t.Errorf("sim-engine flags give\n%+v\nsimengine.DefaultConfig is\n%+v", got, want)
	}
}

func TestDemoFlagDefaults(t *testing.T) {
	got, err := parseCLI(t, "demo").Demo.Config()
	if err != nil {
		t.Fatal(err)
	}
	if want := demo.Defaults(); !reflect.DeepEqual(got, want) {
		t.Errorf("demo flags give\n%+v\ndemo.Defaults is\n%+v", got, want)
	}
}

func TestDemoFlags(t *testing.T) {
	c, err := parseCLI(t, "demo", "--method-timings", "--duration", "30s", "--fault.slow-first-token-rate", "0.2",
		"--slo.ttft", "200ms", "--prometheus.url", "http://p:9090").Demo.Config()
	if err != nil {
		t.Fatal(err)
	}
	want := demo.MethodTimings()
	if c.Idle != want.Idle || c.Engine.StartupDelay != want.Engine.StartupDelay || c.ReleaseHold != want.ReleaseHold {
		t.Errorf("--method-timings: idle %s startup %s hold %s, want %s %s %s",
			c.Idle, c.Engine.StartupDelay, c.ReleaseHold, want.Idle, want.Engine.StartupDelay, want.ReleaseHold)
	}
	if c.Formal != 30*time.Second {
		t.Errorf("--duration 30s over --method-timings: %s", c.Formal)
	}
	if c.Engine.Faults.SlowFirstTokenRate != 0.2 || c.Params.SLOTTFT != 200*time.Millisecond || c.PrometheusURL != "http://p:9090" {
		t.Errorf("faults %+v, SLO TTFT %s, prometheus %q", c.Engine.Faults, c.Params.SLOTTFT, c.PrometheusURL)
	}
	if err := c.Validate(); err != nil {
		t.Error(err)
	}
}

// --scenario shapes the demo after the other flags; each scenario is a
// valid configuration.
func TestDemoScenarioFlag(t *testing.T) {
	for _, name := range demo.Scenarios {
		c, err := parseCLI(t, "demo", "--scenario", name).Demo.Config()
		if err != nil {
			t.Fatalf("--scenario %s: %v", name, err)
		}
		if err := c.Validate(); err != nil {
			t.Errorf("--scenario %s: %v", name, err)
		}
	}
	c, err := parseCLI(t, "demo", "--scenario", "queueing").Demo.Config()
	if err != nil || c.Engine.MaxBatch != 4 || c.Concurrency != 24 {
		t.Errorf("--scenario queueing: max batch %d, concurrency %d, err %v; want 4 and 24", c.Engine.MaxBatch, c.Concurrency, err)
	}
}

// A timing given as 0 is used, and refused by the demo's validation, not
// replaced by the preset.
func TestDemoZeroTimingRefused(t *testing.T) {
	c, err := parseCLI(t, "demo", "--idle-duration", "0s").Demo.Config()
	if err != nil {
		t.Fatal(err)
	}
	if c.Idle != 0 {
		t.Fatalf("--idle-duration 0s gives idle %s", c.Idle)
	}
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "idle: 0s") {
		t.Errorf("--idle-duration 0s: %v, want it refused", err)
	}
}

// --set sets the demo's settings without a flag, over the flags; an
// unknown path or a value of the wrong type is a usage error naming it.
func TestDemoSet(t *testing.T) {
	c, err := parseCLI(t, "demo", "--set", "steady_state.window=50", "--set", "sample.interval=200ms",
		"--set", "steady_state.weighting=requests", "--set", "workload.stddev_output_tokens=0").Demo.Config()
	if err != nil {
		t.Fatal(err)
	}
	if c.Params.SSWindow != 50 || c.SampleInterval != 200*time.Millisecond || c.Params.SSWeighting != "requests" || c.OutputStddev != 0 {
		t.Errorf("--set not applied: window %d, sample interval %s, weighting %q, stddev %d",
			c.Params.SSWindow, c.SampleInterval, c.Params.SSWeighting, c.OutputStddev)
	}
	for _, set := range []string{"steady_state.windw=3", "steady_state.window", "steady_state.window=many"} {
		_, err := parseCLI(t, "demo", "--set", set).Demo.Config()
		if err == nil || exitCode(err) != exitUsage || !strings.Contains(err.Error(), "--set") {
			t.Errorf("--set %s: %v, want a usage error", set, err)
		}
	}
}

// A lifecycle timing's help quotes its preset defaults, the two-minute
// demo's and the method's, as demo.Defaults and demo.MethodTimings have
// them.
func TestDemoTimingHelpQuotesPresets(t *testing.T) {
	_, p := testParser(t)
	flags := map[string]*kong.Flag{}
	for _, f := range findCommand(p.Model.Node, "demo").Flags {
		flags[f.Name] = f
	}
	d, m := demo.Defaults(), demo.MethodTimings()
	for name, v := range map[string][2]time.Duration{
		"idle-duration":    {d.Idle, m.Idle},
		"startup-delay":    {d.Engine.StartupDelay, m.Engine.StartupDelay},
		"duration":         {d.Formal, m.Formal},
		"release.hold":     {d.ReleaseHold, m.ReleaseHold},
		"release.max-wait": {d.ReleaseMaxWait, m.ReleaseMaxWait},
	} {
		f := flags[name]
		if f == nil {
			t.Errorf("demo has no --%s", name)
			continue
		}
		want := shortDuration(v[0]) + "; " + shortDuration(v[1]) + " with --method-timings"
		if !strings.Contains(f.Help, want) {
			t.Errorf("--%s help %q: want it to quote %q", name, f.Help, want)
		}
	}
}
