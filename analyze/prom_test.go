package analyze

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/joulemark/joulemark/internal/testenv"

	"github.com/joulemark/joulemark/internal/realprom"
	"github.com/joulemark/joulemark/remotewrite"
)

// pushRemoteWrite sends the samples through the project's remote-write
// writer, as the benchjob and the exporter do.
func pushRemoteWrite(t *testing.T, url string, samples []remotewrite.Sample) {
	t.Helper()
	w, err := remotewrite.New(remotewrite.Config{URL: url, BatchSize: 5000, BufferSize: len(samples) + 1, MaxElapsed: 20 * time.Second}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range samples {
		if !w.Append(s) {
			t.Fatal("remote-write buffer full")
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := w.Close(ctx)
	if err != nil || st.Lost() > 0 {
		t.Fatalf("remote write: %v, stats %+v (last error %v)", err, st, w.LastError())
	}
}

func analyzeFixture(t *testing.T, url string) *Report {
	t.Helper()
	cfg := Config{PrometheusURL: url, RunID: "fixture-1", Params: fixtureParams(), Now: fixtureNow(), QueryTimeout: 30 * time.Second}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r, _, err := Analyze(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	r.GeneratedBy = ""
	return r
}

// TestRealPrometheus loads the fixture into Debian's Prometheus (2.42+) by
// remote write and checks the report read back over HTTP is the golden one.
func TestRealPrometheus(t *testing.T) {
	testenv.SkipIfShort(t, "starts a Prometheus server")
	srv := realprom.Start(t, "")
	pushRemoteWrite(t, srv.URL+"/api/v1/write", fixtureSamples(fixture()))
	r := analyzeFixture(t, srv.URL)
	if r.Requests.Started != 101 || val(r.SteadyState.JoulesPerToken) != 10 || len(r.Stages) != 5 {
		t.Errorf("read back %d requests, steady J/token %v, %d stages; want 101, 10, 5", r.Requests.Started, val(r.SteadyState.JoulesPerToken), len(r.Stages))
	}
	got, err := MarshalReport(r)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := fixtureReport(t)
	wantJS, _ := MarshalReport(want)
	sameJSON(t, got, wantJS)

	// Analyzed days later (within the lookback), the report is the same.
	later := Config{PrometheusURL: srv.URL, RunID: "fixture-1", Params: fixtureParams(), Now: fixtureNow().Add(5 * 24 * time.Hour)}
	rl, _, err := Analyze(context.Background(), later)
	if err != nil {
		t.Fatal(err)
	}
	rl.GeneratedBy = ""
	laterJS, _ := MarshalReport(rl)
	sameJSON(t, laterJS, got)

	// An unknown run is a clear error.
	cfg := Config{PrometheusURL: srv.URL, RunID: "no-such-run", Params: fixtureParams(), Now: fixtureNow()}
	if _, err := Run(context.Background(), cfg); !errors.Is(err, errRunNotFound) {
		t.Errorf("unknown run: err = %v, want run not found", err)
	}
	// Outside the lookback the run is not found either.
	cfg.RunID, cfg.Now = "fixture-1", fixtureNow().Add(8*24*time.Hour)
	if _, err := Run(context.Background(), cfg); !errors.Is(err, errRunNotFound) {
		t.Errorf("run past the lookback: err = %v, want run not found", err)
	}
}
