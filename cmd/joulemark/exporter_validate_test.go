package main

import (
	"reflect"
	"strings"
	"testing"

	"github.com/joulemark/joulemark/exporter"
	"github.com/joulemark/joulemark/internal/gpu"
)

// TestExporterRejectsNonsenseSettings: values exporter.Config would
// silently replace by a default, or that make no sense, fail at parse time
// with the flag named (exporter.Options.Validate, its field mapped to the
// flag by exporterFlags).
func TestExporterRejectsNonsenseSettings(t *testing.T) {
	for _, tc := range []struct {
		arg, flag, want string
	}{
		{"--release.tolerance=0", "tolerance=0", "want 0 < t < 1"},
		{"--release.tolerance=1", "tolerance=1", "want 0 < t < 1"},
		{"--release.tolerance=-0.1", "tolerance=-0.1", "want 0 < t < 1"},
		{"--release.tolerance=NaN", "tolerance=NaN", "want 0 < t < 1"},
		{"--release.hold=0s", "hold=0s", "want a duration > 0"},
		{"--release.max-wait=0s", "max-wait=0s", "want a duration > 0"},
		{"--idle.cv-threshold=0", "threshold=0", "want a coefficient"},
		{"--run.max-kept=0", "run.max-kept=0", "want at least 1"},
		{"--sample.interval=0s", "interval=0s", "want at least 10ms"},
		{"--sample.interval=1ms", "interval=1ms", "want at least 10ms"}, // a usage error too (exit 2), not the exporter's (issue 33 low)
		{"--run.metrics-ttl=-1m", "metrics-ttl=-1m0s", "want a duration ≥ 0"},
		{"--sample.retention=0s", "retention=0s", "want a duration > 0"},
		{"--run.max-age=0s", "max-age=0s", "want a duration > 0"},
		{"--storage.save-interval=0s", "save-interval=0s", "want a duration > 0"},
		{"--web.max-requests=-1", "max-requests=-1", "want 0 (no limit)"},
		{"--gpus=-1", "gpus=-1", "want 0 (all"},
		{"--nvml.init-timeout=-1s", "init-timeout=-1s", "want a duration ≥ 0"},
		{"--nvml.retry-interval=0s", "retry-interval=0s", "want a duration > 0"},
		{"--kubelet.refresh-interval=0s", "refresh-interval=0s", "want a duration > 0"},
		{"--path.procfs=", "procfs=", "want a path"},
		{"--kubelet.device-checkpoint-file=", "checkpoint-file=", "want a path"},
		{"--sim.idle-watts=0", "idle-watts=0", "want watts > 0"},
		{"--sim.max-watts=0", "max-watts=0", "want watts > 0"},
		{"--sim.startup-watts=0", "startup-watts=0", "want watts > 0"},
		{"--sim.ramp-seconds=0", "ramp-seconds=0", "want seconds > 0"},
		{"--sim.decay-seconds=0", "decay-seconds=0", "want seconds > 0"},
		{"--sim.power-bias=0", "power-bias=0", "want 0.5..1.5"},
	} {
		_, p := testParser(t)
		_, err := p.Parse([]string{"exporter", "--gpu=sim", tc.arg})
		if err == nil || !strings.Contains(err.Error(), "--") || !strings.Contains(err.Error(), tc.flag) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error naming the flag (%q) and %q", tc.arg, err, tc.flag, tc.want)
		}
	}
	// the defaults pass, and so do the zeros that mean something
	parseCLI(t, "exporter", "--gpu=sim")
	for _, arg := range []string{"--run.metrics-ttl=0s", "--web.max-requests=0", "--gpus=0", "--nvml.init-timeout=0s",
		"--storage.path=", "--host.powercap-path=", "--kubelet.pod-resources-socket=", "--sim.noise-watts=0", "--sim.seed=0",
		"--sim.counter-period=0s", "--sim.down-for=0s"} {
		parseCLI(t, "exporter", "--gpu=sim", arg)
	}
}

// TestExporterFlagDefaultsFromPackages: the exporter's flag defaults are
// the packages' defaults (one source): what the command passes with no
// flag set is exporter.Defaults, gpu.SimDefaults and
// exporter.KubeletDefaults.
func TestExporterFlagDefaultsFromPackages(t *testing.T) {
	c := parseCLI(t, "exporter").Exporter
	d, sim, k := exporter.Defaults(), gpu.SimDefaults(), exporter.KubeletDefaults()
	got := []any{c.Interval, c.Retention, c.MaxRequests, c.ReleaseTolerance, c.ReleaseHold, c.ReleaseMaxWait, c.IdleCVThreshold,
		c.MaxRuns, c.SaveInterval, c.RunMaxAge, c.RunMetricsTTL,
		c.SimIdleWatts, c.SimMaxWatts, c.SimStartupWatts, c.SimRampSeconds, c.SimDecaySeconds, c.SimNoiseWatts, c.SimSeed, c.SimPowerBias,
		c.Kubelet.PodResourcesSocket, c.Kubelet.RefreshInterval, c.Kubelet.GPUResources, c.Kubelet.DeviceCheckpoint, c.Kubelet.ProcFS}
	want := []any{d.Interval, d.Retention, d.MaxRequests, d.ReleaseTolerance, d.ReleaseHold, d.ReleaseMaxWait, d.IdleCVThreshold,
		d.MaxRuns, d.SaveInterval, d.RunMaxAge, d.RunMetricsTTL,
		sim.IdleWatts, sim.MaxWatts, sim.StartupWatts, sim.RampSeconds, sim.DecayTau, sim.NoiseWatts, sim.Seed, sim.PowerBias,
		k.Socket, k.Refresh, k.GPUResources, k.Checkpoint, k.ProcFS}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("flag defaults\n%v\nwant the packages' defaults\n%v", got, want)
	}
}

// Every field exporterFlags maps is one of exporter.Options, its flag one
// of joulemark exporter's.
func TestExporterFlagsOfFields(t *testing.T) {
	_, p := testParser(t)
	flags := map[string]bool{}
	for _, f := range findCommand(p.Model.Node, "exporter").Flags {
		flags[f.Name] = true
	}
	for field, flag := range exporterFlags {
		if !flags[flag] {
			t.Errorf("%s maps to --%s, no flag of joulemark exporter", field, flag)
		}
		typ := reflect.TypeFor[exporter.Options]()
		for name := range strings.SplitSeq(field, ".") {
			f, ok := typ.FieldByName(name)
			if !ok {
				t.Errorf("%s is no field of exporter.Options", field)
				break
			}
			typ = f.Type
		}
	}
}
