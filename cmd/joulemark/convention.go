package main

import (
	"strings"

	"github.com/alecthomas/kong"
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
