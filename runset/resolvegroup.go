package runset

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/joulemark/joulemark/internal/contract"
	"github.com/joulemark/joulemark/report"
)

// ResolveGroup finds the reports of the repetition group id (bench
// --repeat): those under <runsDir>/<id>-*/report/ and reports/<id>-*/
// whose run.repetition_group is id, in repetition order; a run found in
// both places counts once, from runsDir. It wraps ErrNoReport when there
// is none.
func ResolveGroup(id, runsDir string) ([]string, error) {
	if err := contract.ValidateRunID(id); err != nil {
		return nil, fmt.Errorf("repetition group %s: %w (%w)", id, ErrNoReport, err)
	}
	type member struct {
		path  string
		index int
	}
	var found []member
	seen := map[string]bool{}
	dirs := []groupDir{{"reports", ""}}
	if runsDir != "" {
		dirs = []groupDir{{runsDir, "report"}, {"reports", ""}}
	}
	for _, d := range dirs {
		for _, p := range d.candidates(id) {
			run, err := reportIdentity(p)
			if err != nil {
				return nil, err
			}
			if run == nil || run.RepetitionGroup != id || seen[run.RunID] {
				continue
			}
			seen[run.RunID] = true
			found = append(found, member{p, run.Repetition})
		}
	}
	if len(found) == 0 {
		return nil, fmt.Errorf("repetition group %s: %w (no report with run.repetition_group %q under %s)", id, ErrNoReport, id, groupDirs(dirs, id))
	}
	slices.SortStableFunc(found, func(a, b member) int { return cmp.Compare(a.index, b.index) })
	var paths []string
	for _, m := range found {
		paths = append(paths, m.path)
	}
	return paths, nil
}

// groupDir is a directory of runs (or of analyze outputs) and where a
// run's report.json is below the run's own directory.
type groupDir struct{ dir, sub string }

// candidates are the report.json files of the runs whose id starts with
// id + "-".
func (d groupDir) candidates(id string) []string {
	entries, _ := os.ReadDir(d.dir) // a missing directory has no candidate
	var out []string
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), id+"-") {
			continue
		}
		p := filepath.Join(d.dir, e.Name(), d.sub, report.FileJSON)
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			out = append(out, p)
		}
	}
	return out
}

// groupDirs names where ResolveGroup looked, for its error.
func groupDirs(dirs []groupDir, id string) string {
	var out []string
	for _, d := range dirs {
		out = append(out, filepath.Join(d.dir, id+"-*", d.sub, report.FileJSON))
	}
	return strings.Join(out, ", ")
}

// reportIdentity is the run section of the report at path; nil when it
// has none.
func reportIdentity(path string) (*report.RunIdentity, error) {
	r, err := report.Load(path)
	if err != nil {
		return nil, err
	}
	return r.Run, nil
}

// resolveArg is the report an argument names (ResolveReport) or, when it
// names none and is a run id, the reports of the repetition group of that
// id (ResolveGroup).
func resolveArg(arg, runsDir string) ([]string, error) {
	p, err := ResolveReport(arg, runsDir)
	if err == nil {
		return []string{p}, nil
	}
	if !errors.Is(err, ErrNoReport) || contract.ValidateRunID(arg) != nil {
		return nil, err
	}
	paths, gerr := ResolveGroup(arg, runsDir)
	if gerr != nil {
		return nil, fmt.Errorf("%w; nor is it a repetition group: %w", err, gerr)
	}
	return paths, nil
}
