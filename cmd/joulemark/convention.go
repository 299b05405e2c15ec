package main

import (
	"fmt"
	"log/slog"
	"os"
	"reflect"
	"strings"
	"time"

	"github.com/alecthomas/kong"

	"github.com/joulemark/joulemark/internal/secretfile"
)

// envPrefix starts every environment variable joulemark reads.
const envPrefix = "JOULEMARK_"

// applyConvention gives every flag its environment variable,
// JOULEMARK_<COMMAND>_<FLAG> (globals: JOULEMARK_<FLAG>) (kong.PostBuild).
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
	case f.Name == "help", len(f.Tag.Envs) == 1 && f.Tag.Envs[0] == "-":
		f.Envs, f.Tag.Envs = nil, nil
	case len(f.Tag.Envs) == 0:
		f.Tag.Envs = []string{envName(cmd, f.Name)}
		f.Envs = f.Tag.Envs
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

// defaultsFromTarget makes the value a flag's target holds before parsing
// its default (kong.PostBuild): newParser pre-fills the bench, exporter,
// demo and analyze commands' structs (and sim-engine's faults) with their packages' defaults, which
// are thereby the flags' defaults, shown in --help, one source with the
// configuration files'. A default: tag wins; a pointer has none.
func defaultsFromTarget(k *kong.Kong) error {
	for _, path := range []string{"bench", "exporter", "analyze run", "demo", "sim-engine"} {
		cmd := findCommand(k.Model.Node, path)
		if cmd == nil {
			return fmt.Errorf("no %s command", path)
		}
		for _, f := range cmd.Flags {
			if f.HasDefault || f.Target.Kind() == reflect.Pointer || f.Target.IsZero() {
				continue
			}
			f.Default, f.HasDefault = flagDefault(f), true
			f.Tag.Default, f.Tag.HasDefault = f.Default, true
		}
	}
	return nil
}

// flagDefault is a flag's target written as its default: a duration as
// Prometheus writes it (15m, not 15m0s), a list joined by its separator.
func flagDefault(f *kong.Flag) string {
	switch v := f.Target.Interface().(type) {
	case time.Duration:
		return shortDuration(v)
	}
	if f.Target.Kind() == reflect.Slice {
		var parts []string
		for i := range f.Target.Len() {
			parts = append(parts, fmt.Sprint(f.Target.Index(i).Interface()))
		}
		return strings.Join(parts, string(f.Tag.Sep))
	}
	return fmt.Sprint(f.Target.Interface())
}

// shortDuration is d as Prometheus writes it: 15m, not 15m0s.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
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
