package demo

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/joulemark/joulemark/benchjob"
	"github.com/joulemark/joulemark/internal/simengine"
	"github.com/joulemark/joulemark/report"
)

// BenchmarkDefaultsSteadyState measures whether bench's defaults reach the
// steady state on sim-engine's defaults (end-of-sequence stops, variable
// lengths): bench's default workload, warm-up and formal requests, no
// ignore_eos, at concurrency 8 and 16, seeds 1..JOULEMARK_STEADY_SEEDS
// (default 10; engine, workload and GPU noise), analyze's default
// steady-state test. It reports how many
// seeds reached it and the worst window CV of the best start (the figure
// the test compares with its threshold). The runs take real time (about
// 2 minutes each, JOULEMARK_STEADY_PARALLEL at once, default 5); their
// archives stay in JOULEMARK_STEADY_DIR when set (re-analyse them with
// `joulemark tsdb serve`). docs/bench.md, "Enough for the steady state",
// has the command and the result.
func BenchmarkDefaultsSteadyState(b *testing.B) {
	for _, conc := range []int{8, 16} {
		b.Run(fmt.Sprintf("c%d", conc), func(b *testing.B) {
			n := envInt(b, "JOULEMARK_STEADY_SEEDS", 10)
			for range b.N {
				reached, cvs := steadySeeds(b, conc, n)
				sort.Float64s(cvs)
				b.ReportMetric(float64(reached), "reached")
				b.ReportMetric(float64(n), "seeds")
				b.ReportMetric(cvs[len(cvs)/2], "median_worst_cv")
				b.ReportMetric(cvs[len(cvs)-1], "max_worst_cv")
			}
		})
	}
}

// steadySeeds runs seeds 1..n at concurrency conc and returns how many
// reached the steady state and each run's worst window CV at its start.
func steadySeeds(b *testing.B, conc, n int) (int, []float64) {
	dir := os.Getenv("JOULEMARK_STEADY_DIR")
	if dir == "" {
		dir = b.TempDir()
	}
	par := envInt(b, "JOULEMARK_STEADY_PARALLEL", 5)
	sem := make(chan struct{}, par)
	var mu sync.Mutex
	reached, cvs := 0, make([]float64, 0, n)
	var wg sync.WaitGroup
	for seed := 1; seed <= n; seed++ {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			rep, err := steadyRun(filepath.Join(dir, fmt.Sprintf("c%d", conc)), conc, seed)
			if err != nil {
				b.Errorf("c%d seed %d: %v", conc, seed, err)
				return
			}
			ss := rep.SteadyState
			mu.Lock()
			defer mu.Unlock()
			if ss.Reached {
				reached++
			}
			cv := ss.WindowCV
			if cv == nil {
				b.Errorf("c%d seed %d: no window CV (%s)", conc, seed, ss.Reason)
				return
			}
			cvs = append(cvs, *cv)
			b.Logf("c%d seed %d: reached %v, worst window CV %.4f %s", conc, seed, ss.Reached, *cv, ss.Reason)
		})
	}
	wg.Wait()
	if len(cvs) == 0 {
		b.FailNow()
	}
	return reached, cvs
}

// envInt is the positive integer in the environment variable name, def
// when unset.
func envInt(b *testing.B, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n := 0
	if _, err := fmt.Sscan(v, &n); err != nil || n < 1 {
		b.Fatalf("%s=%q: want a positive integer", name, v)
	}
	return n
}

// steadyRun is one demo run with bench's and sim-engine's defaults (only
// the idle, weight loading and release timings shortened).
func steadyRun(dir string, conc, seed int) (*report.Report, error) {
	bd := benchjob.Defaults()
	cfg := Defaults()
	cfg.Dir = dir
	cfg.RunID = fmt.Sprintf("steady-c%d-s%d", conc, seed)
	cfg.Engine = simengine.DefaultConfig()
	cfg.Engine.Seed = uint64(seed)
	cfg.Engine.StartupDelay = 2 * time.Second
	cfg.Engine.ShutdownDelay = 500 * time.Millisecond
	cfg.Sim.Seed = uint64(seed)
	cfg.Idle = 5 * time.Second
	cfg.ReleaseHold = 2 * time.Second
	cfg.ReleaseMaxWait = time.Minute
	cfg.Concurrency = conc
	cfg.WarmupRequests = bd.WarmupRequests
	cfg.FormalRequests = benchjob.DefaultFormalRequests
	cfg.Formal = 30 * time.Minute // the requests end the formal phase
	w := bd.Workload
	w.Seed = int64(seed)
	cfg.Workload = &w
	cfg.NaturalStops = true
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	res, err := Run(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return res.Report, nil
}
