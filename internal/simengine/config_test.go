package simengine

import (
	"strings"
	"testing"
	"time"
)

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*Config)
		want   string // "" for valid
	}{
		{"default", func(*Config) {}, ""},
		{"no model", func(c *Config) { c.Model = "" }, "model: empty"},
		{"short context", func(c *Config) { c.MaxModelLen = 1 }, "max model len"},
		{"no batch", func(c *Config) { c.MaxBatch = 0 }, "max batch"},
		{"cache below context", func(c *Config) { c.KVCacheTokens = c.MaxModelLen - 1 }, "kv cache tokens"},
		{"negative prefill", func(c *Config) { c.PrefillPerToken = -time.Millisecond }, "prefill per token"},
		{"free steps", func(c *Config) { c.DecodeBase, c.DecodePerSeq = 0, 0 }, "a step must take time"},
		{"negative eos", func(c *Config) { c.EOSMeanTokens = -1 }, "eos mean tokens"},
		{"rate above 1", func(c *Config) { c.Faults.ErrorRate = 1.5 }, "fault error rate"},
		{"NaN rate", func(c *Config) { c.Faults.StallRate = nan() }, "fault stall rate"},
		{"negative stall", func(c *Config) { c.Faults.StallDuration = -time.Second }, "stall duration"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := DefaultConfig()
			tt.mutate(&c)
			err := c.Validate()
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("unexpected error: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("error %v, want one containing %q", err, tt.want)
			}
			if tt.want != "" {
				if _, err := New(c); err == nil {
					t.Error("New accepted an invalid config")
				}
			}
		})
	}
}

func nan() float64 { z := 0.0; return z / z }
