package analyze

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/joulemark/joulemark/internal/promserver"
)

// TestMaxSamplesSplit: the fixture run in a Prometheus that refuses any
// query loading more than maxSamples samples (the engine series' raw read
// holds more). Read through the query API in one window, it fails; with
// Config.MaxSamples the reads are split, no query is refused, and the
// report is the golden one, bit for bit.
func TestMaxSamplesSplit(t *testing.T) {
	const maxSamples = 400
	s, err := promserver.Start(context.Background(), promserver.Options{Dir: filepath.Join(t.TempDir(), "tsdb"), MaxSamples: maxSamples})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	if err := s.AppendSamples(context.Background(), fixtureSamples(fixture())); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cfg := Config{PrometheusURL: s.URL(), RunID: "fixture-1", Params: fixtureParams(), Now: fixtureNow(), QueryTimeout: 30 * time.Second, ReadAPI: ReadQuery}
	if _, err := Load(ctx, cfg); err == nil {
		t.Fatalf("unsplit reads under a limit of %d samples succeeded: the limit does not bite", maxSamples)
	}
	cfg.MaxSamples = maxSamples
	d, err := Load(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	sameAsFixtureReport(t, d)
}
