package experiment

import (
	"fmt"

	"github.com/joulemark/joulemark/benchjob"
)

// BenchOptions are the options of `joulemark bench --config`: benchjob's
// defaults, the run name as run_id, and the --set overrides.
func BenchOptions(sets []string) Options[benchjob.Config] {
	return Options[benchjob.Config]{
		Defaults:  benchjob.Defaults,
		SetName:   func(c *benchjob.Config, name string) { c.RunID = name },
		Sets:      sets,
		NameKey:   "run_id",
		RepeatKey: "repeat",
	}
}

// LoadBench expands a bench experiment file into validated benchjob configs.
func LoadBench(path string, sets []string) ([]Run[benchjob.Config], error) {
	return LoadFile[benchjob.Config](path, BenchOptions(sets))
}

// ApplySets applies --set overrides ("path=value", the path in the
// experiment file, the value in YAML) to cfg, checked as in a file: the
// settings only an experiment file gives reach the bench flags this way.
func ApplySets[T any](cfg *T, sets []string) error {
	parsed, err := parseSets[T](sets)
	if err != nil {
		return err
	}
	for _, s := range parsed {
		if err := pathNode(s.path, s.value).Decode(cfg); err != nil {
			return fmt.Errorf("--set %q: %w", s.text, err)
		}
	}
	return nil
}
