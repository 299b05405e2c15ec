package benchjob

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/joulemark/joulemark/internal/runid"
)

// Sweep runs cfg once per value of its sweep (sweep_concurrency or
// sweep_rate), each point its own run with its own lifecycle and run id
// (<run_id>-c<N> / <run_id>-r<R>; a generated base id when run_id is
// empty). Without a sweep it is Run. It stops at the first point that
// fails or is aborted, returning the results so far.
func Sweep(ctx context.Context, cfg Config, opts Options) ([]*Result, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.RunID == "" {
		cfg.RunID = runid.New() // a sweep's base id, or the run's
	}
	points := sweepPoints(cfg)
	if len(points) == 0 {
		res, err := runValidated(ctx, cfg, opts)
		if res == nil {
			return nil, err
		}
		return []*Result{res}, err
	}
	var out []*Result
	for _, p := range points {
		res, err := runValidated(ctx, p, opts)
		if res != nil {
			out = append(out, res)
		}
		if err != nil {
			return out, fmt.Errorf("sweep point %s: %w", p.RunID, err)
		}
	}
	return out, nil
}

// sweepPoints expands a sweep into one config per point, each id
// <run_id>-c<N> or <run_id>-r<R>.
func sweepPoints(cfg Config) []Config {
	base := cfg.RunID
	var out []Config
	for _, n := range cfg.SweepConcurrency {
		p := cfg
		p.SweepConcurrency, p.SweepRate = nil, nil
		p.Concurrency = n
		p.RunID = base + "-c" + strconv.Itoa(n)
		out = append(out, p)
	}
	for _, r := range cfg.SweepRate {
		p := cfg
		p.SweepConcurrency, p.SweepRate = nil, nil
		p.Rate = r
		p.RunID = base + "-r" + strings.ReplaceAll(strconv.FormatFloat(r, 'f', -1, 64), ".", "_")
		out = append(out, p)
	}
	return out
}

// FreshRunID is cfg's run id when neither it nor any of its sweep points
// has an archive in cfg.RunsDir yet, else the first <run_id>-<n> (n = 2, 3,
// …) free for all of them: how a repeated experiment gets new run ids.
func FreshRunID(cfg Config) string {
	taken := func(id string) bool {
		c := cfg
		c.RunID = id
		ids := []string{id}
		for _, p := range sweepPoints(c) {
			ids = append(ids, p.RunID)
		}
		for _, x := range ids {
			if _, err := os.Stat(filepath.Join(cfg.RunsDir, x)); err == nil {
				return true
			}
		}
		return false
	}
	id := cfg.RunID
	for n := 2; taken(id); n++ {
		id = cfg.RunID + "-" + strconv.Itoa(n)
	}
	return id
}
