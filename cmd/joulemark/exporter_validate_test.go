package main

import (
	"os"
	"path/filepath"
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
		{"--run.max-kept=0", "run.max-kept=0", "want at least 1"},
		{"--sample.interval=0s", "interval=0s", "want at least 10ms"},
		{"--sample.interval=1ms", "interval=1ms", "want at least 10ms"}, // a usage error too (exit 2), not the exporter's (issue 33 low)
		{"--sample.retention=0s", "retention=0s", "want a duration > 0"},
		{"--run.max-age=0s", "max-age=0s", "want a duration > 0"},
		{"--storage.save-interval=0s", "save-interval=0s", "want a duration > 0"},
		{"--web.max-requests=-1", "max-requests=-1", "want 0 (no limit)"},
		{"--gpus=-1", "gpus=-1", "want 0 (all"},
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
	for _, arg := range []string{"--web.max-requests=0", "--gpus=0",
		"--storage.path=", "--host.powercap-path=", "--kubelet.pod-resources-socket=", "--sim.noise-watts=0", "--sim.seed=0",
		"--sim.counter-period=0s", "--sim.down-for=0s"} {
		parseCLI(t, "exporter", "--gpu=sim", arg)
	}
}

// TestExporterFileSettings: --config.file sets the tuning without a flag
// (strict YAML), validated as the flags are, its errors naming the
// setting's path in the file; the zeros that mean something pass.
func TestExporterFileSettings(t *testing.T) {
	dir := t.TempDir()
	write := func(name, yaml string) string {
		f := filepath.Join(dir, name)
		if err := os.WriteFile(f, []byte(yaml), 0o600); err != nil {
			t.Fatal(err)
		}
		return f
	}
	ok := write("ok.yaml", "idle:\n  cv_threshold: 0.1\nrun:\n  metrics_ttl: 0s\nnvml:\n  init_timeout: 0s\n")
	o := parseCLI(t, "exporter", "--config.file="+ok).Exporter.options()
	if o.Config.IdleCVThreshold != 0.1 || o.Config.RunMetricsTTL != 0 || o.Backend.NVMLInitTimeout != 0 {
		t.Errorf("file settings not applied: %+v", o)
	}
	if o := parseCLI(t, "exporter", "--config.file="+write("empty.yaml", "")).Exporter.options(); o.Config.IdleCVThreshold != exporter.Defaults().IdleCVThreshold {
		t.Errorf("empty file: idle CV threshold %v", o.Config.IdleCVThreshold)
	}
	for _, tc := range []struct{ yaml, want string }{
		{"idle:\n  cv_threshold: 0\n", "idle.cv_threshold=0: want a coefficient"},
		{"run:\n  metrics_ttl: -1m\n", "run.metrics_ttl=-1m0s: want a duration ≥ 0"},
		{"nvml:\n  init_timeout: -1s\n", "nvml.init_timeout=-1s: want a duration ≥ 0"},
		{"idle:\n  cv_treshold: 0.1\n", "field cv_treshold not found"},
		{"sample:\n  interval: 1s\n", "field sample not found"},
	} {
		_, p := testParser(t)
		f := write("bad.yaml", tc.yaml)
		if _, err := p.Parse([]string{"exporter", "--config.file=" + f}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.yaml, err, tc.want)
		}
	}
	for path, field := range exporter.FileSettings {
		if _, ok := exporterFlags[field]; ok {
			t.Errorf("%s (%s) is a flag's field too", path, field)
		}
	}
}

// TestExporterFlagDefaultsFromPackages: the exporter's flag defaults are
// the packages' defaults (one source): what the command passes with no
// flag set is exporter.DefaultOptions (the derived settings aside).
func TestExporterFlagDefaultsFromPackages(t *testing.T) {
	got := exporter.Options(parseCLI(t, "exporter").Exporter.Settings)
	if want := exporter.DefaultOptions(); !reflect.DeepEqual(got, want) {
		t.Errorf("flag defaults\n%+v\nwant exporter.DefaultOptions\n%+v", got, want)
	}
	if d, sim := exporter.Defaults(), gpu.SimDefaults(); got.Config.SaveInterval != d.SaveInterval || got.Backend.Sim.PowerBias != sim.PowerBias {
		t.Errorf("defaults differ from exporter.Defaults or gpu.SimDefaults")
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
