package benchjob

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/joulemark/joulemark/internal/contract"
	"github.com/joulemark/joulemark/internal/runarchive"
)

// Sweep runs cfg once per value of its sweep (sweep_concurrency or
// sweep_rate), each point its own run with its own lifecycle and run id
// (<run_id>-c<N> / <run_id>-r<R>; a generated base id when run_id is
// empty), and each point repeat times (<point id>-rep<i>, one repetition
// group per point). Without a sweep or a repeat it is Run. No run starts
// when any of the ids has an archive already; it stops at the first run
// that fails or is aborted, returning the results so far.
func Sweep(ctx context.Context, cfg Config, opts Options) ([]*Result, error) {
	if err := cfg.Validate(); err != nil {
		return nil, cfg.secrets().Error(err)
	}
	if cfg.RunID == "" {
		cfg.RunID = contract.NewRunID() // a sweep's base id, or the run's
	}
	points := runPoints(cfg)
	if opts.Archive == nil {
		for _, p := range points {
			if _, err := os.Stat(filepath.Join(p.RunsDir, p.RunID)); err == nil {
				return nil, fmt.Errorf("run %q in %s (of %s): %w (never overwritten: give a new --run-id)", p.RunID, p.RunsDir, cfg.RunID, runarchive.ErrExists)
			}
		}
	}
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
			return out, fmt.Errorf("%s %s: %w", p.repetition.kind(), p.RunID, err)
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

// PointRunIDs lists the run ids cfg runs under, one per sweep point and
// repetition, nil when it is one run (bench --dry-run shows them). An id
// not given yet (generated at the start) reads "<run-id>".
func (c Config) PointRunIDs() []string {
	if c.RunID == "" {
		c.RunID = "<run-id>"
	}
	var ids []string
	for _, p := range runPoints(c) {
		ids = append(ids, p.RunID)
	}
	return ids
}

// MaxRepeat is the most repetitions of one configuration.
const MaxRepeat = 100

// repetition is a run's place in its repetition group.
type repetition struct {
	group     string // the group's id: the run id the repetitions extend
	index, of int    // 1-based index, group size
}

// kind names a run of a sweep or a repeat in errors.
func (r repetition) kind() string {
	if r.group != "" {
		return fmt.Sprintf("repetition %d/%d", r.index, r.of)
	}
	return "sweep point"
}

// repetitionSuffix is how a repetition's run id extends its group's:
// <group>-rep<i> (not -r<i>, which a sweep_rate point uses).
const repetitionSuffix = "-rep"

// runPoints expands the sweep and the repeat into one config per run, each
// with its run id: the sweep points, each repeated cfg.Repeat times
// (<point id>-rep1 … -repN, the point's id the group); none when cfg is
// one run.
func runPoints(cfg Config) []Config {
	pts := sweepPoints(cfg)
	if cfg.Repeat <= 1 {
		return pts
	}
	if len(pts) == 0 {
		pts = []Config{cfg}
	}
	var out []Config
	for _, p := range pts {
		for i := 1; i <= cfg.Repeat; i++ {
			q := p
			q.Repeat = 0
			q.repetition = repetition{group: p.RunID, index: i, of: cfg.Repeat}
			q.RunID = p.RunID + repetitionSuffix + strconv.Itoa(i)
			out = append(out, q)
		}
	}
	return out
}

// FreshRunID is cfg's run id when neither it nor any of its sweep points
// or repetitions has an archive in cfg.RunsDir yet, else the first <run_id>-<n> (n = 2, 3,
// …) free for all of them: how a repeated experiment gets new run ids.
func FreshRunID(cfg Config) string {
	taken := func(id string) bool {
		c := cfg
		c.RunID = id
		ids := []string{id}
		for _, p := range runPoints(c) {
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
