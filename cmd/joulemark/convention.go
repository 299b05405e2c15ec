package main

import (
	"fmt"
	"log/slog"
	"os"
	"reflect"
	"slices"
	"strings"

	"github.com/alecthomas/kong"

	"github.com/joulemark/joulemark/internal/clientflags"
	"github.com/joulemark/joulemark/internal/secretfile"
)

// envPrefix starts every environment variable joulemark reads.
const envPrefix = "JOULEMARK_"

// renamed is a flag renamed to the convention of docs/cli.md; the old name
// stays one release as a hidden alias that logs a warning. Every entry is in
// docs/cli.md's "Renamed flags" table (TestRenamesDocumented).
type renamed struct {
	cmd, old, new string
}

// renames are the flags renamed by the convention.
var renames = []renamed{
	{"demo", "dir", "runs-dir"},
	{"demo", "prometheus-url", "prometheus.url"},
	{"demo", "sample-interval", "sample.interval"},
	{"demo", "scrape-interval", "scrape.interval"},
	{"demo", "idle", "idle.duration"},
	{"demo", "formal", "formal.duration"},
	{"demo", "formal-requests", "formal.requests"},
	{"demo", "warmup-requests", "warmup.requests"},
	{"demo", "release-hold", "release.hold"},
	{"demo", "release-max-wait", "release.max-wait"},
	{"demo", "input-tokens", "mean-input-tokens"},
	{"demo", "output-tokens", "mean-output-tokens"},
	{"demo", "output-stddev", "stddev-output-tokens"},
	{"demo", "slo-ttft", "slo.ttft"},
	{"demo", "slo-tpot", "slo.tpot"},
	{"demo", "ss-window", "steady-state.window"},
	{"demo", "ss-windows", "steady-state.windows"},
	{"demo", "ss-cv", "steady-state.cv"},

	{"exporter", "interval", "sample.interval"},
	{"exporter", "retention", "sample.retention"},
	{"exporter", "api-token-file", "web.api-token-file"},
	{"exporter", "release-tolerance", "release.tolerance"},
	{"exporter", "release-hold", "release.hold"},
	{"exporter", "release-max-wait", "release.max-wait"},
	{"exporter", "idle-cv-threshold", "idle.cv-threshold"},
	{"exporter", "remote-write-url", "remote-write.url"},

	{"phase", "exporter", "exporter.url"},
	{"phase", "gpus", "exporter.gpus"},
	{"phase", "pod", "engine.pod"},
	{"phase", "api-token-file", "exporter.bearer-token-file"},
	{"phase", "exporter.basic-auth-user", "exporter.basic-auth-user"},
	{"phase", "exporter.basic-auth-password-file", "exporter.basic-auth-password-file"},
	{"phase", "exporter.ca-file", "exporter.ca-file"},
	{"phase", "exporter.insecure-skip-verify", "exporter.insecure-skip-verify"},

	{"bench", "requests", "formal.requests"},
	{"bench", "duration", "formal.duration"},
	{"bench", "warmup-requests", "warmup.requests"},
	{"bench", "idle-duration", "idle.duration"},
	{"bench", "sweep-concurrency", "sweep.concurrency"},
	{"bench", "sweep-rate", "sweep.rate"},
	{"bench", "connect-timeout", "timeout.connect"},
	{"bench", "first-token-timeout", "timeout.first-token"},
	{"bench", "request-timeout", "timeout.request"},
	{"bench", "engine-cmd", "engine.cmd"},
	{"bench", "engine-start", "engine.start"},
	{"bench", "engine-stop", "engine.stop"},
	{"bench", "ready-timeout", "engine.ready-timeout"},
	{"bench", "stop-grace", "engine.stop-grace"},
	{"bench", "release-wait", "release.wait"},
	{"bench", "engine-version", "engine.version"},
	{"bench", "engine-image", "engine.image"},
	{"bench", "engine-metrics", "engine.metrics"},
	{"bench", "engine-metrics-url", "engine.metrics-url"},
	{"bench", "exporter", "exporter.url"},
	{"bench", "exporter-token-file", "exporter.bearer-token-file"},
	{"bench", "api-key-file", "target.api-key-file"},
	{"bench", "remote-write-url", "remote-write.url"},
	{"bench", "remote-write-bearer-token-file", "remote-write.bearer-token-file"},
	{"bench", "remote-write-basic-user", "remote-write.basic-auth-user"},
	{"bench", "remote-write-basic-password-file", "remote-write.basic-auth-password-file"},
	{"bench", "remote-write-ca-file", "remote-write.ca-file"},
	{"bench", "remote-write-cert-file", "remote-write.cert-file"},
	{"bench", "remote-write-key-file", "remote-write.key-file"},
	{"bench", "remote-write-insecure-skip-verify", "remote-write.insecure-skip-verify"},
	{"bench", "remote-write-header", "remote-write.header"},

	{"analyze run", "prometheus-url", "prometheus.url"},
	{"analyze run", "prometheus.basic-user", "prometheus.basic-auth-user"},
	{"analyze run", "prometheus.basic-password-file", "prometheus.basic-auth-password-file"},
	{"analyze run", "prometheus.tls-ca", "prometheus.ca-file"},
	{"analyze run", "prometheus.tls-cert", "prometheus.cert-file"},
	{"analyze run", "prometheus.tls-key", "prometheus.key-file"},
	{"analyze run", "prometheus.tls-server-name", "prometheus.server-name"},
	{"analyze run", "prometheus.header", "prometheus.header"},
	{"analyze run", "archive", "archive"},
	{"analyze run", "slo-ttft", "slo.ttft"},
	{"analyze run", "slo-tpot", "slo.tpot"},
	{"analyze run", "ss-window", "steady-state.window"},
	{"analyze run", "ss-windows", "steady-state.windows"},
	{"analyze run", "ss-cv", "steady-state.cv"},
	{"analyze run", "query-timeout", "query.timeout"},

	{"analyze production", "query-timeout", "query.timeout"},

	{"plan", "slo-ttft-p95", "slo.ttft-p95"},
	{"plan", "slo-tpot-p95", "slo.tpot-p95"},

	{"tsdb serve", "data", "storage.tsdb.path"},
}

// applyConvention gives every flag its environment variable,
// JOULEMARK_<COMMAND>_<FLAG> (globals: JOULEMARK_<FLAG>), and every renamed
// flag its old name as an alias (kong.PostBuild).
func applyConvention(k *kong.Kong) error {
	var walk func(n *kong.Node, cmd string)
	walk = func(n *kong.Node, cmd string) {
		for _, f := range n.Flags {
			setEnv(f, cmd)
			lastWins(f)
		}
		for _, c := range n.Children {
			if c.Type == kong.CommandNode {
				walk(c, strings.TrimSpace(cmd+" "+c.Name))
			}
		}
	}
	walk(k.Model.Node, "")
	for _, r := range renames {
		f := findFlag(k.Model.Node, r.cmd, r.new)
		if f == nil {
			return fmt.Errorf("renamed flag %s --%s: no flag --%s", r.cmd, r.old, r.new)
		}
		if r.old != r.new {
			f.Aliases = append(f.Aliases, r.old)
		}
	}
	return nil
}

// envName is the environment variable of flag name in command cmd ("" for
// a global flag).
func envName(cmd, name string) string {
	s := strings.NewReplacer("-", "_", ".", "_", " ", "_").Replace(strings.TrimSpace(cmd + " " + name))
	return envPrefix + strings.ToUpper(s)
}

func setEnv(f *kong.Flag, cmd string) {
	switch {
	case f.Name == "help", f.Hidden, len(f.Tag.Envs) == 1 && f.Tag.Envs[0] == "-":
		f.Envs, f.Tag.Envs = nil, nil
	case len(f.Tag.Envs) == 0:
		f.Tag.Envs = []string{envName(cmd, f.Name)}
		f.Envs = f.Tag.Envs
	}
}

// findFlag is flag name of command path cmd (space-separated).
func findFlag(root *kong.Node, cmd, name string) *kong.Flag {
	n := findCommand(root, cmd)
	if n == nil {
		return nil
	}
	for _, f := range n.Flags {
		if f.Name == name {
			return f
		}
	}
	return nil
}

// findCommand is the command at path (space-separated names) below root;
// nil when there is none.
func findCommand(root *kong.Node, path string) *kong.Node {
	n := root
	for _, part := range strings.Fields(path) {
		var next *kong.Node
		for _, c := range n.Children {
			if c.Type == kong.CommandNode && c.Name == part {
				next = c
			}
		}
		if next == nil {
			return nil
		}
		n = next
	}
	return n
}

// warnDeprecated logs a warning for every deprecated flag on the command
// line (an old name, or a hidden flag kept one release) and for every
// environment variable named as before the convention.
func warnDeprecated(kctx *kong.Context, args []string, log *slog.Logger) {
	flags := kctx.Flags()
	for _, a := range args {
		if a == "--" {
			break
		}
		name, ok := strings.CutPrefix(a, "--")
		if !ok {
			continue
		}
		name, _, _ = strings.Cut(name, "=")
		for _, f := range flags {
			switch {
			case f.Name == name && f.Hidden:
				log.Warn("deprecated flag: "+f.Help, "flag", "--"+name)
			case slices.Contains(f.Aliases, name) && f.Hidden:
				log.Warn("deprecated flag: "+f.Help, "flag", "--"+name)
			case slices.Contains(f.Aliases, name):
				log.Warn("deprecated flag: use --"+f.Name, "flag", "--"+name)
			}
		}
	}
	known := map[string]bool{clientflags.TokenEnv: true}
	for _, f := range flags {
		for _, e := range f.Envs {
			known[e] = true
		}
	}
	for _, f := range flags {
		if len(f.Envs) == 0 {
			continue
		}
		for _, n := range append([]string{f.Name}, f.Aliases...) {
			old := envName("", n)
			if _, set := os.LookupEnv(old); set && !known[old] {
				log.Warn("environment variable no longer read: use "+f.Envs[0], "env", old)
			}
		}
	}
}

// lastWins makes a file or directory flag (type:"existingfile",
// "existingdir") keep its last value when given more than once, as every
// other flag does: kong's own mappers keep the first (they skip a value
// once one is set), so a wrapper appending a different token file would
// silently keep the old one.
func lastWins(f *kong.Flag) {
	if (f.Tag.Type == "existingfile" || f.Tag.Type == "existingdir") && f.Target.Kind() == reflect.String {
		f.Mapper = existingPath{dir: f.Tag.Type == "existingdir"}
	}
}

// existingPath decodes the path of an existing file (dir: directory);
// each value replaces the one before.
type existingPath struct{ dir bool }

func (m existingPath) Decode(ctx *kong.DecodeContext, target reflect.Value) error {
	var path string
	if err := ctx.Scan.PopValueInto("path", &path); err != nil {
		return err
	}
	if !ctx.Value.Active {
		return nil // a flag of another command: its default is not checked
	}
	if path == "-" && !m.dir { // stdin, as kong's mapper allows
		target.SetString(path)
		return nil
	}
	path = kong.ExpandPath(path)
	st, err := os.Stat(path)
	switch {
	case err != nil:
		return err
	case m.dir && !st.IsDir():
		return fmt.Errorf("%q exists but is not a directory", path)
	case !m.dir && st.IsDir():
		return fmt.Errorf("%q exists but is a directory", path)
	}
	target.SetString(path)
	return nil
}

// secretFlag reports whether flag name gives a file holding a secret.
func secretFlag(name string) bool {
	for _, suffix := range []string{"token-file", "api-key-file", "password-file"} {
		if strings.HasSuffix(name, suffix) {
			return true
		}
	}
	return false
}

// warnExposedSecrets logs a warning for every secret file given (token,
// API key, password) that every user of the host can read.
func warnExposedSecrets(kctx *kong.Context, log *slog.Logger) {
	for _, f := range kctx.Flags() {
		if !secretFlag(f.Name) {
			continue
		}
		file, _ := kctx.FlagValue(f).(string)
		if file == "" {
			continue
		}
		if exposed, mode := secretfile.Exposed(file); exposed {
			log.Warn("secret file readable by every user of this host; chmod 600 it (or 400)", "flag", "--"+f.Name, "file", file, "mode", mode.String())
		}
	}
}
