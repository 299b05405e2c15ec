package demo

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/joulemark/joulemark/internal/contract/runidtest"
)

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*Config)
		want   string
	}{
		{"defaults", func(*Config) {}, ""},
		{"method timings", func(c *Config) { *c = MethodTimings() }, ""},
		{"no dir", func(c *Config) { c.Dir = "" }, "dir: empty"},
		{"bad run id", func(c *Config) { c.RunID = "../x" }, "run id"},
		{"bad prometheus url", func(c *Config) { c.PrometheusURL = "localhost:9090" }, "prometheus url"},
		{"keep serving external", func(c *Config) { c.PrometheusURL = "http://p:9090"; c.KeepServing = true }, "keep serving"},
		{"no gpus", func(c *Config) { c.GPUs = 0 }, "gpus"},
		{"scrape faster than samples", func(c *Config) { c.ScrapeInterval = 50 * time.Millisecond }, "scrape interval"},
		{"hold past max wait", func(c *Config) { c.ReleaseHold = 3 * time.Minute }, "release hold"},
		{"stddev too wide", func(c *Config) { c.OutputStddev = 1000 }, "output stddev"},
		{"engine", func(c *Config) { c.Engine.MaxBatch = 0 }, "engine: "},
		{"analysis", func(c *Config) { c.Params.SSCV = 0 }, "analysis: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Defaults()
			tt.mutate(&c)
			err := c.Validate()
			if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
				t.Errorf("error %v, want %q", err, tt.want)
			}
		})
	}
}

// The demo accepts exactly the ids of the shared table (the bench and the
// exporter's API test the same one); an empty id means "generate one".
func TestConfigValidateRunID(t *testing.T) {
	for _, tc := range runidtest.Cases {
		if tc.ID == "" {
			continue
		}
		c := Defaults()
		c.RunID = tc.ID
		if err := c.Validate(); (err == nil) != tc.Valid {
			t.Errorf("run id %q: %v, want valid=%v", tc.ID, err, tc.Valid)
		}
	}
}

func TestRunRefusesExistingRun(t *testing.T) {
	c := Defaults()
	c.Dir = t.TempDir()
	c.RunID = "r1"
	c.Out = io.Discard
	if err := mkdirRun(t, c.Dir, "r1"); err != nil {
		t.Fatal(err)
	}
	if _, err := Run(t.Context(), c); err == nil || !strings.Contains(err.Error(), "never overwritten") {
		t.Errorf("error %v, want a refusal to overwrite", err)
	}
}

// TestDefaultsTakeAboutTwoMinutes keeps the documented length honest: the
// phases the demo controls add up to well under two minutes, leaving the
// release decay and the analysis the rest.
func TestDefaultsTakeAboutTwoMinutes(t *testing.T) {
	c := Defaults()
	fixed := c.Idle + c.Engine.StartupDelay + c.Formal + c.Engine.ShutdownDelay + c.ReleaseHold
	if fixed < 80*time.Second || fixed > 100*time.Second {
		t.Errorf("fixed phases %s; the demo is documented as about two minutes", fixed)
	}
}

func mkdirRun(t *testing.T, dir, id string) error {
	t.Helper()
	return os.Mkdir(filepath.Join(dir, id), 0o755)
}

func TestQuietLogger(t *testing.T) {
	var buf strings.Builder
	base := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo}))
	q := quiet(base).With("component", "prometheus")
	q.Info("tsdb started")
	q.Warn("scrape failed")
	if s := buf.String(); strings.Contains(s, "tsdb started") || !strings.Contains(s, "scrape failed") || !strings.Contains(s, "component=prometheus") {
		t.Errorf("quiet logger wrote %q", s)
	}
	buf.Reset()
	debug := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	quiet(debug).Info("tsdb started")
	if !strings.Contains(buf.String(), "tsdb started") {
		t.Error("at debug level the embedded components' info lines must pass")
	}
}
