package analyze

import (
	"bytes"
	"context"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/joulemark/joulemark/internal/contract"
	"github.com/joulemark/joulemark/internal/promserver"
	"github.com/joulemark/joulemark/internal/remotewrite"
	"github.com/joulemark/joulemark/internal/testkit/golden"
	"github.com/joulemark/joulemark/report"
)

func startPromserver(t *testing.T) *promserver.Server {
	t.Helper()
	s, err := promserver.Start(context.Background(), promserver.Options{Dir: filepath.Join(t.TempDir(), "tsdb")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("closing promserver: %v", err)
		}
	})
	return s
}

// TestGoldenThroughTSDB loads the fixture into the in-process TSDB, analyzes
// it over the HTTP query API and compares every file of the written report
// with the golden ones.
func TestGoldenThroughTSDB(t *testing.T) {
	s := startPromserver(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := s.AppendSamples(ctx, fixtureSamples(fixture())); err != nil {
		t.Fatal(err)
	}
	r := analyzeFixture(t, s.URL())
	js, err := report.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	golden.Compare(t, "fixture.tsdb.report.json", js)
	// The Prometheus path and the pure computation agree.
	want, _ := fixtureReport(t)
	wantJS, _ := report.Marshal(want)
	sameJSON(t, js, wantJS)

	// The same through Run, writing the files.
	dir := filepath.Join(t.TempDir(), "report")
	cfg := Config{PrometheusURL: s.URL(), RunID: "fixture-1", Params: fixtureParams(), Now: fixtureNow(), OutDir: dir}
	if _, err := Run(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(dir, report.FileMarkdown))
	if err != nil {
		t.Fatal(err)
	}
	golden.Compare(t, "fixture.report.md", md[:len(md)-len(generatedLine(t, md))])
	// Run refuses to overwrite it before querying anything.
	if _, err := Run(ctx, cfg); err == nil {
		t.Error("second Run into the same directory succeeded")
	}
	// Into the run's default directory (KeepEarlier), a re-analysis
	// succeeds and keeps the earlier report as report.1.
	cfg.KeepEarlier = true
	if _, err := Run(ctx, cfg); err != nil {
		t.Fatalf("re-analysis into the default directory: %v", err)
	}
	if md1, err := os.ReadFile(filepath.Join(dir+".1", report.FileMarkdown)); err != nil || !bytes.Equal(md1, md) {
		t.Errorf("the earlier report is not kept as %s.1: %v", dir, err)
	}
}

// generatedLine is the trailing "_joulemark VERSION_" line, which depends on
// the build.
func generatedLine(t *testing.T, md []byte) []byte {
	t.Helper()
	for i := len(md) - 2; i >= 0; i-- {
		if md[i] == '\n' {
			return md[i+1:]
		}
	}
	t.Fatal("report.md has one line")
	return nil
}

// TestScenarios runs flagged variants of the fixture through the TSDB.
func TestScenariosThroughTSDB(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(d *RunData)
		flags  []string
		edit   func([]remotewrite.Sample) []remotewrite.Sample
	}{
		{"release not closed", func(d *RunData) { d.ReleaseClosed = new(false) }, []string{contract.FlagReleaseNotClosed}, nil},
		{"exporter disagrees", func(d *RunData) { d.PhaseEnergy["release"] = 1100 }, []string{contract.FlagEnergySourcesDisagree}, nil},
		{"counter reset mid-formal", func(d *RunData) {
			// The exporter restarted at +80 s: its counter starts again
			// from 0. Energy is unchanged (increase() semantics).
			for g := range d.GPUs {
				var off float64
				for k, s := range d.GPUs[g].Energy {
					if s.T >= fixtureBase+80 && off == 0 {
						off = d.GPUs[g].Energy[k-1].V + 20 // first post-restart value is 20 J below a continuation
					}
					if off != 0 {
						d.GPUs[g].Energy[k].V = s.V - off + 20
					}
				}
			}
		}, nil, nil},
		// Without the exporter's phase energies the run's GPUs are those of
		// the exporters that published its phases; another host's GPU is
		// not counted.
		{"no exporter phase energy", func(d *RunData) { d.PhaseEnergy = nil }, nil, nil},
		// One request lost its latency sample: it cannot be reconstructed.
		{"request without latency", func(d *RunData) {}, []string{contract.FlagRequestsIncomplete}, func(ss []remotewrite.Sample) []remotewrite.Sample {
			return slices.DeleteFunc(ss, func(s remotewrite.Sample) bool {
				return s.Labels["__name__"] == contract.RequestLatency && s.TimestampMs == int64(fixtureBase+100)*1000
			})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := startPromserver(t)
			d := fixture()
			tt.mutate(d)
			samples := fixtureSamples(d)
			for k := range 200 {
				ts := int64(fixtureBase-10+float64(k)) * 1000
				samples = append(samples, remotewrite.Sample{Value: 500 * float64(k), TimestampMs: ts, Labels: map[string]string{
					"__name__": contract.GPUEnergy, "instance": "other:9400", "gpu": "0", "uuid": "GPU-other"}})
			}
			if tt.edit != nil {
				samples = tt.edit(samples)
			}
			if err := s.AppendSamples(context.Background(), samples); err != nil {
				t.Fatal(err)
			}
			r := analyzeFixture(t, s.URL())
			got := flagCodes(r)
			if len(got) != len(tt.flags) || (len(got) > 0 && got[0] != tt.flags[0]) {
				t.Errorf("flags %v, want %v", got, tt.flags)
			}
			if r.Measurement.GPUs != 2 {
				t.Errorf("%d GPUs in the run, want 2 (another host's GPU counted?)", r.Measurement.GPUs)
			}
			if tt.edit != nil && r.Requests.Started != 100 {
				t.Errorf("%d formal requests, want 100 (one left out)", r.Requests.Started)
			}
			if tt.flags == nil && val(r.Energy.FormalJoules) != 10000 {
				t.Errorf("formal energy %v, want 10000", val(r.Energy.FormalJoules))
			}
		})
	}
}

// TestRawEnergySamplesPreferred: where the exporter pushed its high-rate
// energy counter (joulemark_gpu_energy_sample_joules_total), the counter
// figure comes from it, not from the 1 s scrapes. The raw series here runs 4%
// above the scraped one, so the formal stage's counter figure reads 10400 J
// and disagrees with the exporter's 10000 J, which stays the stage energy.
func TestRawEnergySamplesPreferred(t *testing.T) {
	s := startPromserver(t)
	d := fixture()
	samples := fixtureSamples(d)
	for g, w := range []float64{62.4, 41.6} {
		for k := 0; k <= 1500; k++ {
			tt := -5 + float64(k)/10
			samples = append(samples, remotewrite.Sample{Value: 1000 + w*(tt+5), TimestampMs: int64((fixtureBase + tt) * 1000), Labels: map[string]string{
				"__name__": contract.GPUEnergySample, "gpu": d.GPUs[g].GPU, "uuid": d.GPUs[g].UUID}})
		}
	}
	if err := s.AppendSamples(context.Background(), samples); err != nil {
		t.Fatal(err)
	}
	r := analyzeFixture(t, s.URL())
	if got := val(r.Stages["formal"].CounterEnergyJoules); got < 10399 || got > 10401 {
		t.Fatalf("formal counter energy %v, want 10400 from the raw counter samples", got)
	}
	if got := val(r.Energy.FormalJoules); got != 10000 {
		t.Errorf("formal energy %v, want the exporter's 10000", got)
	}
	if !slices.Contains(flagCodes(r), contract.FlagEnergySourcesDisagree) {
		t.Errorf("flags %v, want %s (raw counter 4%% above the exporter's phase energy)", flagCodes(r), contract.FlagEnergySourcesDisagree)
	}
}

// TestScrapeOutageWithRawSeries: Prometheus missed 30 s of scrapes in the
// formal phase, but the exporter's pushed raw series (energy and power at
// 10 Hz) are complete: coverage and power come from them, the run stays
// valid and says so.
func TestScrapeOutageWithRawSeries(t *testing.T) {
	s := startPromserver(t)
	d := fixture()
	samples := slices.DeleteFunc(fixtureSamples(d), func(x remotewrite.Sample) bool {
		n := x.Labels["__name__"]
		at := float64(x.TimestampMs) / 1000
		return (n == contract.GPUEnergy || n == contract.GPUPower) && at > fixtureBase+40 && at < fixtureBase+70
	})
	for _, g := range d.GPUs {
		for k := 0; k+1 < len(g.Energy); k++ {
			a, b := g.Energy[k], g.Energy[k+1]
			for j := range 10 {
				f := float64(j) / 10
				tt := a.T + f*(b.T-a.T)
				lbl := func(name string) map[string]string {
					return map[string]string{"__name__": name, "gpu": g.GPU, "uuid": g.UUID, "instance": "node-a", "job": "joulemark-exporter"}
				}
				samples = append(samples,
					remotewrite.Sample{Labels: lbl(contract.GPUEnergySample), Value: a.V + f*(b.V-a.V), TimestampMs: int64(math.Round(tt * 1000))},
					remotewrite.Sample{Labels: lbl(contract.GPUPowerSample), Value: (b.V - a.V) / (b.T - a.T), TimestampMs: int64(math.Round(tt * 1000))})
			}
		}
	}
	if err := s.AppendSamples(context.Background(), samples); err != nil {
		t.Fatal(err)
	}
	r := analyzeFixture(t, s.URL())
	if slices.Contains(flagCodes(r), contract.FlagCoverageLow) || !r.Valid {
		t.Errorf("flags %v valid %v: a scrape outage with complete raw series must stay valid", flagCodes(r), r.Valid)
	}
	if r.Measurement.CoverageSeries != "raw" || r.Measurement.CoverageRatio == nil || *r.Measurement.CoverageRatio < 0.99 {
		t.Errorf("coverage %v from %q, want ≥ 0.99 from the raw series", r.Measurement.CoverageRatio, r.Measurement.CoverageSeries)
	}
	if got := val(r.Energy.FormalJoules); got != 10000 {
		t.Errorf("formal energy %v, want 10000", got)
	}
}

// TestRunIDReusedThroughTSDB: a second lifecycle under the same id (another
// bench, an exporter that forgot the id) sets the idle start gauge again,
// later: analyze finds the changed start in Prometheus and invalidates the
// report instead of mixing the two runs.
func TestRunIDReusedThroughTSDB(t *testing.T) {
	s := startPromserver(t)
	samples := fixtureSamples(fixture())
	var last remotewrite.Sample
	for _, x := range samples {
		if x.Labels["__name__"] == contract.PhaseStart && x.Labels["phase"] == "idle" && x.TimestampMs > last.TimestampMs {
			last = x
		}
	}
	samples = append(samples, remotewrite.Sample{Labels: last.Labels, Value: last.Value + 400, TimestampMs: last.TimestampMs + 1000})
	if err := s.AppendSamples(context.Background(), samples); err != nil {
		t.Fatal(err)
	}
	r := analyzeFixture(t, s.URL())
	if !slices.Contains(flagCodes(r), contract.FlagRunIDReused) || r.Valid {
		t.Fatalf("flags %v valid %v, want run_id_reused and invalid", flagCodes(r), r.Valid)
	}
	for _, f := range r.Flags {
		if f.Code == contract.FlagRunIDReused && !strings.Contains(f.Message, "phases started more than once: idle") {
			t.Errorf("run_id_reused says %q, want the restarted phase named", f.Message)
		}
	}
}
