package exporter

import (
	"fmt"
	"time"
)

// FieldError is a setting out of its range, named by its path in Options
// (Config.ReleaseHold, Backend.Sim.IdleWatts; a Config alone: ReleaseHold):
// a caller maps the path to its own name for the setting (the exporter
// command to its flag).
type FieldError struct {
	Field string
	Value any
	Want  string
}

func (e *FieldError) Error() string {
	return fmt.Sprintf("exporter: %s=%v: want %s", e.Field, e.Value, e.Want)
}

// check is one setting's range: bad when the value is out of it.
type check struct {
	field string
	value any
	bad   bool
	want  string
}

// firstBad is the first check out of range as a *FieldError, its field
// prefixed; nil when every one passes.
func firstBad(prefix string, checks []check) error {
	for _, c := range checks {
		if c.bad {
			return &FieldError{Field: prefix + c.field, Value: c.value, Want: c.want}
		}
	}
	return nil
}

const positive = "a duration > 0"

// Validate refuses settings out of their range, a zero among them where it
// has no meaning (the zeros that mean something are documented on the
// fields); the settings New derives (SlowInterval, ReleaseWindow) are
// derived first. The error is a *FieldError.
func (cfg Config) Validate() error {
	return firstBad("", cfg.checks())
}

// checks are Config's ranges, on a copy with the derived settings set.
func (cfg Config) checks() []check {
	cfg.setDerived()
	samples := int64(0)
	if cfg.Interval > 0 {
		samples = int64(cfg.Retention / cfg.Interval)
	}
	return []check{
		{"Interval", cfg.Interval, cfg.Interval < 10*time.Millisecond, "at least 10ms"},
		{"SlowInterval", cfg.SlowInterval, cfg.SlowInterval < cfg.Interval, "at least the interval"},
		{"Retention", cfg.Retention, cfg.Retention <= 0, positive},
		{"Retention", cfg.Retention, cfg.Retention < 2*cfg.Interval || samples > 10_000_000, "between two intervals and 10M samples"},
		{"ReleaseTolerance", cfg.ReleaseTolerance, !(cfg.ReleaseTolerance > 0 && cfg.ReleaseTolerance < 1), "0 < t < 1 (a fraction of the idle baseline)"},
		{"ReleaseHold", cfg.ReleaseHold, cfg.ReleaseHold <= 0, positive},
		{"ReleaseHold", cfg.ReleaseHold, cfg.ReleaseHold > cfg.Retention, "at most the sample retention " + cfg.Retention.String()},
		{"ReleaseMaxWait", cfg.ReleaseMaxWait, cfg.ReleaseMaxWait <= 0, positive},
		{"ReleaseMaxWait", cfg.ReleaseMaxWait, cfg.ReleaseMaxWait < cfg.ReleaseHold, "at least the release hold " + cfg.ReleaseHold.String()},
		{"IdleCVThreshold", cfg.IdleCVThreshold, !(cfg.IdleCVThreshold > 0), "a coefficient of variation > 0"},
		{"MaxRuns", cfg.MaxRuns, cfg.MaxRuns < 1, "at least 1"},
		{"RunMaxAge", cfg.RunMaxAge, cfg.RunMaxAge <= 0, positive},
		{"RunMetricsTTL", cfg.RunMetricsTTL, cfg.RunMetricsTTL < 0, "a duration ≥ 0 (0: until the run is evicted)"},
		{"MaxRequests", cfg.MaxRequests, cfg.MaxRequests < 0, "0 (no limit) or more"},
		{"SaveInterval", cfg.SaveInterval, cfg.SaveInterval <= 0 && cfg.StoragePath != "", positive},
	}
}

// Validate refuses settings out of their range as the exporter command
// gives them, every one set: the backend's, the simulated GPUs' (whatever
// the backend), the attribution's and Config's; a zero the packages would
// replace by their default is refused too (Main, New and OpenBackend take
// it as the default). The error is a *FieldError.
func (o Options) Validate() error {
	b, s, k := o.Backend, o.Backend.Sim, o.Kubelet
	return firstBad("", append([]check{
		{"Backend.GPUs", b.GPUs, b.GPUs < 0, "0 (all, or 8 simulated) or more"},
		{"Backend.NVMLInitTimeout", b.NVMLInitTimeout, b.NVMLInitTimeout < 0, "a duration ≥ 0 (0: one attempt)"},
		{"Backend.NVMLRetryInterval", b.NVMLRetryInterval, b.NVMLRetryInterval <= 0, positive},
		{"Backend.Sim.IdleWatts", s.IdleWatts, !(s.IdleWatts > 0), "watts > 0"},
		{"Backend.Sim.MaxWatts", s.MaxWatts, !(s.MaxWatts > 0), "watts > 0"},
		{"Backend.Sim.StartupWatts", s.StartupWatts, !(s.StartupWatts > 0), "watts > 0"},
		{"Backend.Sim.RampSeconds", s.RampSeconds, !(s.RampSeconds > 0), "seconds > 0"},
		{"Backend.Sim.DecayTau", s.DecayTau, !(s.DecayTau > 0), "seconds > 0"},
		{"Backend.Sim.PowerBias", s.PowerBias, !(s.PowerBias >= 0.5 && s.PowerBias <= 1.5), "0.5..1.5"},
		{"Kubelet.Refresh", k.Refresh, k.Refresh <= 0, positive},
		{"Kubelet.ProcFS", k.ProcFS, k.ProcFS == "", "a path (procfs mount point)"},
		{"Kubelet.Checkpoint", k.Checkpoint, k.Checkpoint == "", "a path (the kubelet's device checkpoint)"},
	}, prefixed("Config.", o.Config.checks())...))
}

// prefixed is checks with their fields under prefix.
func prefixed(prefix string, checks []check) []check {
	for i := range checks {
		checks[i].field = prefix + checks[i].field
	}
	return checks
}
