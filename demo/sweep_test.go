package demo

import (
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/joulemark/joulemark/internal/testkit/testenv"
	"github.com/joulemark/joulemark/report"
	"github.com/joulemark/joulemark/runset"
	"github.com/joulemark/joulemark/runset/compare"
)

// TestDemoSweepKnee is docs/demo.md's sweep, shortened: demo runs at batch
// limit 8 and concurrency 2, 8 and 16 through the whole pipeline, then
// compare. J/token falls steeply up to the batch limit and is flat past it,
// and compare names the knee at the limit with queueing after it.
func TestDemoSweepKnee(t *testing.T) {
	testenv.SkipIfShort(t, "three end-to-end demo runs (~45 s each, two at a time)")
	dir := t.TempDir()
	loads := []int{2, 8, 16}
	reports := make([]string, len(loads))
	t.Run("runs", func(t *testing.T) {
		for k, c := range loads {
			t.Run(fmt.Sprintf("concurrency %d", c), func(t *testing.T) {
				t.Parallel()
				res := runDemo(t, sweepConfig(dir, c))
				reports[k] = filepath.Join(res.ReportDir, report.FileJSON)
			})
		}
	})
	if t.Failed() {
		t.FailNow()
	}
	set, err := runset.Load(reports, runset.LoadOptions{RunsDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	runs := set.Runs
	res := compare.Compare(runset.NewSet(runs), compare.Options{})
	if len(res.Sweeps) != 1 || len(res.Sweeps[0].Points) != len(loads) {
		t.Fatalf("sweeps %+v, want one of %d points", res.Sweeps, len(loads))
	}
	sw := res.Sweeps[0]
	jpt := make([]float64, len(loads))
	for k, p := range sw.Points {
		if len(p.Invalid) > 0 || p.SteadyStateJPT == nil {
			t.Fatalf("point %s: invalid runs %+v", p.Load, p.Invalid)
		}
		jpt[k] = *p.SteadyStateJPT
	}
	t.Logf("steady-state J/token %v at concurrency %v; knee %q, after %q: %v", jpt, loads, sw.Knee, sw.After, sw.AfterDiagnosis)
	if jpt[0] < 2*jpt[1] {
		t.Errorf("J/token %.3g at concurrency 2, %.3g at the batch limit 8: want it to fall at least 2-fold", jpt[0], jpt[1])
	}
	if d := math.Abs(jpt[2]/jpt[1] - 1); d > 0.15 {
		t.Errorf("J/token %.3g past the batch limit (16), %.3g at it (8): want flat within 15%%, off by %.0f%%", jpt[2], jpt[1], 100*d)
	}
	if sw.Knee != "concurrency 8" || len(sw.AfterDiagnosis) == 0 || !strings.HasPrefix(sw.AfterDiagnosis[0], report.RuleQueueing) {
		t.Errorf("knee %q, after %q with %v: want the knee at the batch limit (concurrency 8) and queueing after it", sw.Knee, sw.After, sw.AfterDiagnosis)
	}
}

// sweepConfig is one point of the sweep: docs/demo.md's flags on 2 GPUs
// with a 20 s formal phase.
func sweepConfig(dir string, concurrency int) Config {
	c := Defaults()
	c.Dir, c.RunID = dir, fmt.Sprintf("sweep-c%d", concurrency)
	c.GPUs = 2
	c.Idle, c.Engine.StartupDelay = 3*time.Second, 2*time.Second
	c.WarmupRequests, c.Formal = 8, 20*time.Second
	c.ReleaseHold, c.ReleaseMaxWait = 2*time.Second, 30*time.Second
	c.Engine.ShutdownDelay = 200 * time.Millisecond
	c.Sim.RampSeconds, c.Sim.DecayTau = 0.5, 0.5
	c.Engine.MaxBatch, c.Concurrency = 8, concurrency
	c.OutputTokens, c.OutputStddev = 50, 10
	c.Params.SSWindow, c.Params.SSCV = 10, 0.05
	return c
}
