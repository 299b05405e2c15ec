package benchjob

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/joulemark/joulemark/benchjob/openai/openaitest"
	"github.com/joulemark/joulemark/exporter"
	"github.com/joulemark/joulemark/internal/gpu"
	"github.com/joulemark/joulemark/internal/phaseapi"
	"github.com/joulemark/joulemark/internal/runarchive"
)

// TestRunMeasuresEngineGPUsOnly runs the lifecycle with gpus set
// to half of four simulated GPUs whose loads differ: every phase's energy
// is the simulator's exact integral over those two GPUs only, and the
// manifest lists only them.
func TestRunMeasuresEngineGPUsOnly(t *testing.T) {
	sim, err := gpu.NewSim(gpu.SimConfig{GPUs: 4, EnergyCounter: true, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	for i, l := range []float64{0.6, 0.3, 0.9, 1} {
		if err := sim.SetGPULoad(i, l); err != nil {
			t.Fatal(err)
		}
	}
	exp, expSrv := startSimExporter(t, sim)
	ctx := context.Background()
	srv := openaitest.New(openaitest.Behavior{TokenDelay: time.Millisecond})
	defer srv.Close()
	t.Setenv("JOULEMARK_API_TOKEN", "tok")
	devs := exp.Devices()
	cfg := testConfig(t, srv.BaseURL())
	cfg.Exporters = []string{expSrv.URL}
	cfg.ExporterGPUs = []string{devs[0].UUID, devs[1].UUID}
	cfg.IdleDuration = 300 * time.Millisecond
	cfg.Requests = 20
	cfg.Concurrency = 2
	cfg.RunID = "half-gpus"
	opts := testOptions()
	opts.Engine = &fakeEngine{}
	res, err := Run(ctx, cfg, opts)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	st := res.Release[expSrv.URL]
	if st == nil || len(st.Phases) != 5 {
		t.Fatalf("exporter status %+v", st)
	}
	var run, all float64
	for _, ps := range st.Phases {
		if ps.End == nil {
			t.Fatalf("phase %s has no end", ps.Phase)
		}
		a, b := exporter.Time(ps.Start), exporter.Time(*ps.End)
		want := sim.ExactEnergy(0, a, b) + sim.ExactEnergy(1, a, b)
		// boundaries are interpolated between 10 ms samples: a sample's
		// energy of slack at each end.
		if slack := 2 * 2 * 700 * 0.01; math.Abs(ps.EnergyJoules-want) > slack {
			t.Errorf("phase %s: %.3f J, want GPUs 0+1 exact %.3f J (±%.0f J)", ps.Phase, ps.EnergyJoules, want, slack)
		}
		run += ps.EnergyJoules
		for i := range 4 {
			all += sim.ExactEnergy(i, a, b)
		}
	}
	if run > 0.6*all {
		t.Errorf("run energy %.1f J is most of all four GPUs' %.1f J", run, all)
	}
	b, err := os.ReadFile(filepath.Join(res.ArchiveDir, runarchive.ManifestFile))
	if err != nil {
		t.Fatal(err)
	}
	var man struct {
		GPUs map[string][]phaseapi.GPUInfo `json:"gpus"`
	}
	if err := json.Unmarshal(b, &man); err != nil {
		t.Fatal(err)
	}
	if g := man.GPUs[expSrv.URL]; len(g) != 2 || g[0].UUID != devs[0].UUID || g[1].UUID != devs[1].UUID {
		t.Errorf("manifest GPUs %+v, want GPUs 0 and 1", man.GPUs)
	}
}
