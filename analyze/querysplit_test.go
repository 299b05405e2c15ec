package analyze

import (
	"context"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/joulemark/joulemark/internal/promserver"
	"github.com/joulemark/joulemark/internal/remoteread"
	"github.com/joulemark/joulemark/internal/testkit/realprom"
	"github.com/joulemark/joulemark/internal/testkit/testenv"
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
	cfg := Config{PrometheusURL: s.URL(), RunID: "fixture-1", Params: fixtureParams(), Now: fixtureNow(), QueryTimeout: 30 * time.Second, ReadAPI: remoteread.Query}
	if _, err := loadChecked(ctx, cfg); err == nil {
		t.Fatalf("unsplit reads under a limit of %d samples succeeded: the limit does not bite", maxSamples)
	}
	cfg.MaxSamples = maxSamples
	d, err := loadChecked(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	sameAsFixtureReport(t, d)
}

// TestChunkedReadVictoriaMetrics: windowed reads through VictoriaMetrics'
// query API (no remote read), in windows of 5 s and 7 s and split under a
// 200-sample limit (VictoriaMetrics' census slots aligned as Prometheus'),
// read the same data as one window, and the fixture's report is the
// golden one.
func TestChunkedReadVictoriaMetrics(t *testing.T) {
	testenv.SkipIfShort(t, "starts VictoriaMetrics")
	srv := realprom.StartVictoriaMetrics(t)
	pushRemoteWrite(t, srv.URL+"/api/v1/write", fixtureSamples(fixture()))
	srv.Flush(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	whole, err := testLoader(t, srv.URL, 24*time.Hour, 1).load(ctx)
	if err != nil {
		t.Fatalf("%v\nVictoriaMetrics log:\n%s", err, srv.Log())
	}
	if want := fixture(); len(whole.Requests) != len(want.Requests) || len(whole.GPUs) != len(want.GPUs) {
		t.Fatalf("one window: %d requests, %d GPUs; want %d, %d", len(whole.Requests), len(whole.GPUs), len(want.Requests), len(want.GPUs))
	}
	sameAsFixtureReport(t, whole)
	for _, rd := range []struct {
		chunk      time.Duration
		maxSamples int64
	}{{5 * time.Second, 0}, {7 * time.Second, 0}, {24 * time.Hour, 200}} {
		l := testLoader(t, srv.URL, rd.chunk, 3)
		l.maxSamples = rd.maxSamples
		got, err := l.load(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, whole) {
			t.Errorf("windows of %s, limit %d: read %d requests, %d GPUs; one window: %d, %d", rd.chunk, rd.maxSamples, len(got.Requests), len(got.GPUs), len(whole.Requests), len(whole.GPUs))
		}
	}
}
