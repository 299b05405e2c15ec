package production

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/config"

	"github.com/joulemark/joulemark/internal/promserver"
	"github.com/joulemark/joulemark/internal/remoteread"
	"github.com/joulemark/joulemark/internal/remotewrite"
	"github.com/joulemark/joulemark/internal/testkit/realprom"
)

// rangeConfig is the fixture's range at url, read with readAPI.
func rangeConfig(url string, t0 float64, readAPI string) Config {
	return Config{PrometheusURL: url, HTTP: config.DefaultHTTPClientConfig,
		From: time.Unix(0, int64(t0*1e9)), To: time.Unix(0, int64((t0+span)*1e9)), ReadAPI: readAPI}
}

// TestProductionVictoriaMetrics: the fixture remote-written into a real
// VictoriaMetrics (no remote read: auto falls back to the query API)
// gives the hand-computed figures.
func TestProductionVictoriaMetrics(t *testing.T) {
	srv := realprom.StartVictoriaMetrics(t)
	t0 := float64(time.Now().Add(-40 * time.Minute).Unix())
	w, err := remotewrite.New(remotewrite.Config{URL: srv.URL + "/api/v1/write"}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range fixtureSamples(t0) {
		w.Append(s)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if st, err := w.Close(ctx); err != nil || st.Lost() > 0 {
		t.Fatalf("remote write: %+v %v", st, err)
	}
	srv.Flush(t)
	var logs bytes.Buffer
	cfg := rangeConfig(srv.URL, t0, remoteread.Auto)
	cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	r, err := Run(ctx, cfg)
	if err != nil {
		t.Fatalf("%v\nVictoriaMetrics log:\n%s", err, srv.Log())
	}
	if !strings.Contains(logs.String(), "remote read unavailable") {
		t.Errorf("no fallback to the query API logged: %q", logs.String())
	}
	checkReport(t, r, t0)
}

// TestProductionMaxSamples: under a Prometheus that refuses queries
// loading more than maxSamples samples (each pod energy series holds
// more), one query per series fails; split with MaxSamples, the report
// equals the unlimited one.
func TestProductionMaxSamples(t *testing.T) {
	const maxSamples = 300
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	t0 := float64(time.Now().Add(-time.Hour).Unix())
	var js []string
	for _, limit := range []int{0, maxSamples} {
		s, err := promserver.Start(ctx, promserver.Options{Dir: filepath.Join(t.TempDir(), "tsdb"), MaxSamples: limit})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		if err := s.AppendSamples(ctx, fixtureSamples(t0)); err != nil {
			t.Fatal(err)
		}
		cfg := rangeConfig(s.URL(), t0, remoteread.Query)
		if limit > 0 {
			if _, err := Run(ctx, cfg); err == nil || !strings.Contains(err.Error(), "too many samples") {
				t.Fatalf("unsplit under a limit of %d: err %v, want Prometheus' too many samples", limit, err)
			}
			cfg.MaxSamples = int64(limit)
		}
		r, err := Run(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		checkReport(t, r, t0)
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		js = append(js, string(b))
	}
	if js[0] != js[1] {
		t.Errorf("split and unsplit reports differ:\n%s\n%s", js[0], js[1])
	}
}
