package benchjob

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/joulemark/joulemark/internal/runarchive"
	"github.com/joulemark/joulemark/internal/secretfile"
	"github.com/joulemark/joulemark/internal/version"
)

// configYAML renders c as YAML (secrets marshal as <secret>), and the same
// document as a generic map for the manifest.
func configYAML(c *Config) ([]byte, map[string]any, error) {
	b, err := yaml.Marshal(c.shown())
	if err != nil {
		return nil, nil, fmt.Errorf("encoding config: %w", err)
	}
	var m map[string]any
	if err := yaml.Unmarshal(b, &m); err != nil {
		return nil, nil, fmt.Errorf("encoding config: %w", err)
	}
	return b, m, nil
}

// shown is a copy of c with every URL redacted (secretfile.RedactURL), as
// the archive stores it.
func (c *Config) shown() *Config {
	s := *c
	s.Target = secretfile.RedactURL(c.Target)
	s.Exporters = make([]string, len(c.Exporters))
	for i, u := range c.Exporters {
		s.Exporters[i] = secretfile.RedactURL(u)
	}
	s.Prometheus.URL = secretfile.RedactURL(c.Prometheus.URL)
	s.RemoteWrite.URL = secretfile.RedactURL(c.RemoteWrite.URL)
	s.Engine.MetricsURL = secretfile.RedactURL(c.Engine.MetricsURL)
	return &s
}

// secrets are the secrets of c's URLs, scrubbed from its errors and logs.
func (c *Config) secrets() secretfile.Secrets {
	return secretfile.SecretsOf(append([]string{c.Target, c.Prometheus.URL, c.RemoteWrite.URL, c.Engine.MetricsURL}, c.Exporters...)...)
}

func hostInfo() runarchive.HostInfo {
	h, _ := os.Hostname()
	return runarchive.HostInfo{Hostname: h, OS: runtime.GOOS, Arch: runtime.GOARCH, CPUs: runtime.NumCPU(), GoVersion: runtime.Version()}
}

func joulemarkInfo() runarchive.JoulemarkInfo {
	v, rev, dirty := version.Info()
	return runarchive.JoulemarkInfo{Version: v, Revision: rev, Dirty: dirty}
}

// gitInfo returns the commit and dirty flag of the checkout in the working
// directory, or nil when it is not one (or git is missing).
func gitInfo(ctx context.Context) *runarchive.GitInfo {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "git", "rev-parse", "HEAD").Output()
	if err != nil {
		return nil
	}
	g := &runarchive.GitInfo{Commit: strings.TrimSpace(string(out))}
	st, err := exec.CommandContext(ctx, "git", "status", "--porcelain", "--untracked-files=no").Output()
	if err == nil {
		g.Dirty = len(strings.TrimSpace(string(st))) > 0
	}
	return g
}

func thinking(c *Config) string {
	switch {
	case c.Extras.EnableThinking == nil:
		return "engine_default"
	case *c.Extras.EnableThinking:
		return "enabled"
	default:
		return "disabled"
	}
}
