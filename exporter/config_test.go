package exporter

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/joulemark/joulemark/internal/gpu"
)

// newExp is New with the zero settings of cfg taken from Defaults(), for
// tests that set only what they test.
func newExp(cfg Config) (*Exporter, error) {
	d := Defaults()
	orDefault(&cfg.Interval, d.Interval)
	orDefault(&cfg.Retention, d.Retention)
	orDefault(&cfg.ReleaseTolerance, d.ReleaseTolerance)
	orDefault(&cfg.ReleaseHold, d.ReleaseHold)
	orDefault(&cfg.ReleaseMaxWait, d.ReleaseMaxWait)
	orDefault(&cfg.IdleCVThreshold, d.IdleCVThreshold)
	orDefault(&cfg.MaxRuns, d.MaxRuns)
	orDefault(&cfg.RunMetricsTTL, d.RunMetricsTTL)
	orDefault(&cfg.RunMaxAge, d.RunMaxAge)
	orDefault(&cfg.MaxRequests, d.MaxRequests)
	orDefault(&cfg.SaveInterval, d.SaveInterval)
	return New(cfg)
}

// orDefault sets *v to d when it is the zero value.
func orDefault[T comparable](v *T, d T) {
	var zero T
	if *v == zero {
		*v = d
	}
}

// TestBadConfig: New replaces no zero setting by a default: a zero (or
// value) without meaning is refused, naming the setting; the zeros that
// mean something are accepted (blackbox_exporter's bad-config table).
func TestBadConfig(t *testing.T) {
	sim, err := gpu.NewSim(gpu.SimConfig{GPUs: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		mod  func(*Config)
		want string // "" accepted
	}{
		{"defaults", func(*Config) {}, ""},
		{"zero interval", func(c *Config) { c.Interval = 0 }, "Interval=0s: want at least 10ms"},
		{"zero retention", func(c *Config) { c.Retention = 0 }, "Retention=0s"},
		{"zero release tolerance", func(c *Config) { c.ReleaseTolerance = 0 }, "ReleaseTolerance=0: want 0 < t < 1"},
		{"NaN release tolerance", func(c *Config) { c.ReleaseTolerance = math.NaN() }, "ReleaseTolerance=NaN"},
		{"release tolerance 1", func(c *Config) { c.ReleaseTolerance = 1 }, "ReleaseTolerance=1"},
		{"zero release hold", func(c *Config) { c.ReleaseHold = 0 }, "ReleaseHold=0s: want a duration > 0"},
		{"zero release max wait", func(c *Config) { c.ReleaseMaxWait = 0 }, "ReleaseMaxWait=0s"},
		{"zero idle CV threshold", func(c *Config) { c.IdleCVThreshold = 0 }, "IdleCVThreshold=0"},
		{"zero max runs", func(c *Config) { c.MaxRuns = 0 }, "MaxRuns=0"},
		{"zero run max age", func(c *Config) { c.RunMaxAge = 0 }, "RunMaxAge=0s"},
		{"negative run metrics TTL", func(c *Config) { c.RunMetricsTTL = -time.Second }, "RunMetricsTTL=-1s"},
		{"zero run metrics TTL: until evicted", func(c *Config) { c.RunMetricsTTL = 0 }, ""},
		{"negative max requests", func(c *Config) { c.MaxRequests = -1 }, "MaxRequests=-1"},
		{"zero max requests: no limit", func(c *Config) { c.MaxRequests = 0 }, ""},
		{"zero save interval with storage", func(c *Config) { c.SaveInterval, c.StoragePath = 0, t.TempDir() }, "SaveInterval=0s"},
		{"zero save interval without storage", func(c *Config) { c.SaveInterval = 0 }, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Defaults()
			cfg.Backend = sim
			tc.mod(&cfg)
			e, err := New(cfg)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("%v, want an error containing %q", err, tc.want)
			}
			if e != nil {
				e.Close()
			}
		})
	}
}
