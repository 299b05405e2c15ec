package benchjob

import (
	"fmt"

	"github.com/joulemark/joulemark/internal/runarchive"
)

// createArchive creates the run's directory, RunsDir/RunID (or takes the
// one the caller created, Options.Archive), and opens its requests file.
func createArchive(cfg Config, opts Options) (*runarchive.Run, *runarchive.RequestWriter, error) {
	run := opts.Archive
	if run == nil {
		var err error
		if run, err = runarchive.Create(cfg.RunsDir, cfg.RunID); err != nil {
			return nil, nil, err
		}
	} else if run.ID != cfg.RunID {
		return nil, nil, fmt.Errorf("run archive %s is run %q, the config's run_id is %q", run.Dir, run.ID, cfg.RunID)
	}
	reqs, err := run.CreateRequests()
	if err != nil {
		return nil, nil, err
	}
	if opts.wrapRequests != nil {
		reqs.WrapFile(opts.wrapRequests)
	}
	return run, reqs, nil
}
