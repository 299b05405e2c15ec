package experiment

import (
	"fmt"
	"io"
	"strings"

	"go.yaml.in/yaml/v3"
)

// pointLister is a config that runs as several runs (sweep points,
// repetitions), each under its own run id.
type pointLister interface{ PointRunIDs() []string }

// WriteDryRun lists what would run: one line per run with its name and
// where its values come from; with full, the resolved config of each run
// follows as YAML.
func WriteDryRun[T any](w io.Writer, runs []Run[T], full bool) error {
	fmt.Fprintf(w, "%d run(s) would run:\n", len(runs))
	for i, r := range runs {
		name := r.Name
		if name == "" {
			name = "(name from the config)"
		}
		origin := strings.Join(r.Origin, ", ")
		if origin == "" {
			origin = "-"
		}
		if _, err := fmt.Fprintf(w, "%3d  %s  [%s]\n", i+1, name, origin); err != nil {
			return err
		}
		if pl, ok := any(r.Config).(pointLister); ok {
			if ids := pl.PointRunIDs(); len(ids) > 0 {
				fmt.Fprintf(w, "       %d runs: %s\n", len(ids), strings.Join(ids, ", "))
			}
		}
		if full {
			b, err := yaml.Marshal(r.Config)
			if err != nil {
				return fmt.Errorf("run %s: %w", name, err)
			}
			for line := range strings.SplitSeq(strings.TrimRight(string(b), "\n"), "\n") {
				fmt.Fprintf(w, "       %s\n", line)
			}
		}
	}
	return nil
}
