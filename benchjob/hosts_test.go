package benchjob

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/joulemark/joulemark/analyze"
	"github.com/joulemark/joulemark/benchjob/openai/openaitest"
	"github.com/joulemark/joulemark/internal/contract"
	"github.com/joulemark/joulemark/internal/gpu"
	"github.com/joulemark/joulemark/internal/promserver"
)

// TestRunCountsOnlyItsHostsGPUs: two simulated exporters forced to the
// same UUIDs (one --sim.uuid-seed), the other host's GPUs at five times the
// power and scraped twice as often, and a run on one of them. analyze
// counts only the run's host's GPUs: the counter energy agrees with the
// exporter's phase energy (a join by UUID alone would take the other
// host's denser series: energy_sources_disagree).
func TestRunCountsOnlyItsHostsGPUs(t *testing.T) {
	newSim := func(idle float64) gpu.Backend {
		sim, err := gpu.NewSim(gpu.SimConfig{GPUs: 2, IdleWatts: idle, StartupWatts: 450, UUIDSeed: "cloned"})
		if err != nil {
			t.Fatal(err)
		}
		return sim
	}
	_, other := startSimExporter(t, newSim(400))
	_, mine := startSimExporter(t, newSim(80))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	prom, err := promserver.Start(ctx, promserver.Options{Dir: t.TempDir(), ListenAddress: "127.0.0.1:0", ScrapeTargets: []promserver.Target{
		{Job: "exporter-other", URL: other.URL + "/metrics", Interval: 50 * time.Millisecond},
		{Job: "exporter-mine", URL: mine.URL + "/metrics", Interval: 100 * time.Millisecond},
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer prom.Close()
	srv := openaitest.New(openaitest.Behavior{TokenDelay: 5 * time.Millisecond})
	defer srv.Close()
	t.Setenv("JOULEMARK_API_TOKEN", "tok")
	cfg := testConfig(t, srv.BaseURL())
	cfg.Exporters = []string{mine.URL}
	cfg.RemoteWrite.URL = prom.RemoteWriteURL()
	cfg.IdleDuration, cfg.Requests, cfg.RunID = time.Second, 40, "two-hosts-1"
	opts := testOptions()
	opts.Engine = &fakeEngine{}
	if _, err := Run(ctx, cfg, opts); err != nil {
		t.Fatalf("Run: %v", err)
	}
	time.Sleep(300 * time.Millisecond) // a scrape past the run's end
	r, _, err := analyze.Analyze(ctx, analyze.Config{PrometheusURL: prom.URL(), RunID: cfg.RunID, RunsDir: cfg.RunsDir, Wait: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(r.Measurement.GPUUUIDs); n != 2 {
		t.Errorf("%d GPUs measured (%v), want the run's host's 2", n, r.Measurement.GPUUUIDs)
	}
	for _, f := range r.Flags {
		if f.Code == contract.FlagEnergySourcesDisagree || f.Code == contract.FlagNoEnergyData {
			t.Errorf("flag %s: %s", f.Code, f.Message)
		}
	}
	if !strings.HasPrefix(r.Measurement.GPUUUIDs[0], "GPU-5e") {
		t.Errorf("UUIDs %v", r.Measurement.GPUUUIDs)
	}
}
