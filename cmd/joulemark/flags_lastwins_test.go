package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/alecthomas/kong"
)

// TestRepeatedFileFlagsLastWins: every file and directory flag of every
// command (token files, HTTP client configs, datasets…) keeps its last
// value when given twice, as every other flag does, also over its
// environment variable. kong's own mapper keeps the first.
func TestRepeatedFileFlagsLastWins(t *testing.T) {
	dir := t.TempDir()
	first, last := filepath.Join(dir, "first"), filepath.Join(dir, "last")
	for _, p := range []string{first, last} {
		// an empty YAML mapping: a valid exporter --config.file (read at
		// parse time) and a token, read only when the command runs
		if err := os.WriteFile(p, []byte("{}\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	dirA, dirB := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	for _, d := range []string{dirA, dirB} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	n := 0
	for _, tc := range fileFlags(t) {
		a, b := first, last
		if tc.flag.Tag.Type == "existingdir" {
			a, b = dirA, dirB
		}
		for _, viaEnv := range []bool{false, true} {
			if viaEnv && len(tc.flag.Envs) == 0 {
				continue // hidden (deprecated) flags read no environment
			}
			args := append(strings.Fields(tc.cmd), tc.positional...)
			if viaEnv {
				t.Setenv(tc.flag.Envs[0], a)
				args = append(args, "--"+tc.flag.Name+"="+b)
			} else {
				args = append(args, "--"+tc.flag.Name+"="+a, "--"+tc.flag.Name+"="+b)
			}
			var cli CLI
			k, err := newParser(&cli)
			if err != nil {
				t.Fatal(err)
			}
			kctx, err := k.Parse(args)
			if err != nil {
				t.Errorf("%s --%s twice: %v", tc.cmd, tc.flag.Name, err)
				continue
			}
			if got := flagValue(kctx, tc.flag.Name); got != b {
				t.Errorf("joulemark %s --%s (env %v) given %s then %s: got %q, want the last", tc.cmd, tc.flag.Name, viaEnv, a, b, got)
			}
			n++
			if viaEnv {
				os.Unsetenv(tc.flag.Envs[0])
			}
		}
	}
	if n < 40 {
		t.Errorf("checked %d flag uses, want every file flag of every command (≥ 40)", n)
	}
}

type fileFlag struct {
	cmd        string
	positional []string // required arguments and flags
	flag       *kong.Flag
}

// fileFlags lists every existingfile/existingdir flag with its command and
// placeholder values for the command's required positional arguments.
func fileFlags(t *testing.T) []fileFlag {
	t.Helper()
	var cli CLI
	k, err := newParser(&cli)
	if err != nil {
		t.Fatal(err)
	}
	var out []fileFlag
	var walk func(n *kong.Node, cmd string)
	walk = func(n *kong.Node, cmd string) {
		var pos []string
		for _, p := range n.Positional {
			if p.Required {
				pos = append(pos, map[string]string{"phase": "idle"}[p.Name]+"x")
			}
		}
		for _, f := range n.Flags {
			if f.Required {
				pos = append(pos, "--"+f.Name+"=x")
			}
		}
		for _, f := range n.Flags {
			if f.Tag.Type == "existingfile" || f.Tag.Type == "existingdir" {
				out = append(out, fileFlag{cmd: cmd, positional: pos, flag: f})
			}
		}
		for _, c := range n.Children {
			if c.Type == kong.CommandNode {
				walk(c, strings.TrimSpace(cmd+" "+c.Name))
			}
		}
	}
	walk(k.Model.Node, "")
	return out
}

func flagValue(kctx *kong.Context, name string) string {
	for _, f := range kctx.Flags() {
		if f.Name == name {
			s, _ := kctx.FlagValue(f).(string)
			return s
		}
	}
	return ""
}
