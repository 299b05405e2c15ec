package experiment

import "github.com/joulemark/joulemark/benchjob"

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
