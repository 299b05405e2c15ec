package analyze

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/joulemark/joulemark/internal/remoteread"
	"github.com/joulemark/joulemark/internal/testkit/realprom"
	"github.com/joulemark/joulemark/internal/testkit/testenv"
	"github.com/joulemark/joulemark/report"
)

// noRemoteRead fronts the Prometheus at target with a proxy that answers
// its remote-read endpoint 404, as a server without remote read does
// (VictoriaMetrics, a gateway that passes the query API only).
func noRemoteRead(t *testing.T, target string) string {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(u)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/api/v1/read") {
			http.NotFound(w, r)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestReadAPIFallback: with the default read API, a server without remote
// read is read through the query API and gives the same report; asked for
// remote read only, it is an error that says so.
func TestReadAPIFallback(t *testing.T) {
	s := startPromserver(t)
	if err := s.AppendSamples(context.Background(), fixtureSamples(fixture())); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cfg := Config{PrometheusURL: s.URL(), RunID: "fixture-1", Params: fixtureParams(), Now: fixtureNow(), QueryTimeout: 30 * time.Second}
	d, err := loadChecked(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if d.ReadAPI != remoteread.Remote || d.ReadFallback != "" {
		t.Fatalf("auto against a server with remote read: read through %q (%s), want remote read", d.ReadAPI, d.ReadFallback)
	}

	cfg.PrometheusURL = noRemoteRead(t, s.URL())
	var logs bytes.Buffer
	cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	d, err = loadChecked(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if d.ReadAPI != remoteread.Query || !strings.Contains(d.ReadFallback, "404") {
		t.Fatalf("auto without remote read: read through %q (fallback %q), want the query API after a 404", d.ReadAPI, d.ReadFallback)
	}
	if !strings.Contains(logs.String(), "remote read unavailable") || !strings.Contains(logs.String(), "404") {
		t.Errorf("the fallback was not logged with its cause: %q", logs.String())
	}
	cfg.Logger = nil
	sameAsFixtureReport(t, d)

	cfg.ReadAPI = remoteread.Remote
	if _, err := loadChecked(ctx, cfg); err == nil || !strings.Contains(err.Error(), "remote read") {
		t.Fatalf("remote read only, against a server without it: err %v, want a remote read error", err)
	}
	cfg.ReadAPI = "grpc"
	if _, err := loadChecked(ctx, cfg); err == nil || !strings.Contains(err.Error(), "read API") {
		t.Fatalf("unknown read API: err %v", err)
	}
}

// TestVictoriaMetrics: a real VictoriaMetrics (remote write in, query API
// out, no remote read) is read through the query API once auto's first
// remote read fails, and the fixture's report is the golden one, bit for
// bit.
func TestVictoriaMetrics(t *testing.T) {
	testenv.SkipIfShort(t, "starts VictoriaMetrics")
	srv := realprom.StartVictoriaMetrics(t)
	pushRemoteWrite(t, srv.URL+"/api/v1/write", fixtureSamples(fixture()))
	srv.Flush(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var logs bytes.Buffer
	cfg := Config{PrometheusURL: srv.URL, RunID: "fixture-1", Params: fixtureParams(), Now: fixtureNow(), QueryTimeout: 30 * time.Second,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))}
	d, err := loadChecked(ctx, cfg)
	if err != nil {
		t.Fatalf("%v\nVictoriaMetrics log:\n%s", err, srv.Log())
	}
	if d.ReadAPI != remoteread.Query || !strings.Contains(d.ReadFallback, "400") || !strings.Contains(logs.String(), "remote read unavailable") {
		t.Fatalf("read through %q (fallback %q, log %q), want the query API after VictoriaMetrics' 400", d.ReadAPI, d.ReadFallback, logs.String())
	}
	sameAsFixtureReport(t, d)
}

// sameAsFixtureReport computes the report of the fixture data d and
// compares it with the golden one.
func sameAsFixtureReport(t *testing.T, d *RunData) {
	t.Helper()
	r, _, err := computeSeries(d, fixtureParams())
	if err != nil {
		t.Fatal(err)
	}
	js, _ := report.Marshal(r)
	want, _ := fixtureReport(t)
	wantJS, _ := report.Marshal(want)
	sameJSON(t, js, wantJS)
}

// loadChecked is Run's read of the data from Prometheus: cfg with its
// defaults, validated, then load without a bench archive.
func loadChecked(ctx context.Context, cfg Config) (*RunData, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return loadRun(ctx, cfg, nil)
}
