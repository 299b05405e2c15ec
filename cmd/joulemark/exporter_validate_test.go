package main

import (
	"strings"
	"testing"
)

// TestExporterRejectsNonsenseSettings: values exporter.Config would
// silently replace by a default, or that make no sense, fail at parse time
// with the flag named.
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
		{"--max-runs=0", "max-runs=0", "want at least 1"},
		{"--sample.interval=0s", "interval=0s", "want at least 10ms"},
		{"--run.metrics-ttl=0s", "metrics-ttl=0s", "want a duration > 0"},
		{"--run.metrics-ttl=-1m", "metrics-ttl=-1m0s", "want a duration > 0"},
	} {
		_, p := testParser(t)
		_, err := p.Parse([]string{"exporter", "--gpu=sim", tc.arg})
		if err == nil || !strings.Contains(err.Error(), "--") || !strings.Contains(err.Error(), tc.flag) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error naming the flag (%q) and %q", tc.arg, err, tc.flag, tc.want)
		}
	}
	// the defaults pass
	parseCLI(t, "exporter", "--gpu=sim")
}
