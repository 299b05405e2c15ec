package analyze

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/joulemark/joulemark/internal/remoteread"
	"github.com/joulemark/joulemark/internal/testkit/testenv"
	"github.com/joulemark/joulemark/report"

	"github.com/joulemark/joulemark/internal/remotewrite"
	"github.com/joulemark/joulemark/internal/testkit/realprom"
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

// analyzeFixture analyzes the fixture run at url through both read APIs
// (remote read and the query API) and fails unless both give the same
// report, byte for byte; it returns that report.
func analyzeFixture(t *testing.T, url string) *report.Report {
	t.Helper()
	var js [2][]byte
	var rep *report.Report
	for i, api := range []string{remoteread.Remote, remoteread.Query} {
		cfg := Config{PrometheusURL: url, RunID: "fixture-1", Params: fixtureParams(), Now: fixtureNow(), QueryTimeout: 30 * time.Second, ReadAPI: api}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		r, _, err := Analyze(ctx, cfg)
		cancel()
		if err != nil {
			t.Fatalf("read API %s: %v", api, err)
		}
		r.GeneratedBy = ""
		if js[i], err = report.Marshal(r); err != nil {
			t.Fatal(err)
		}
		rep = r
	}
	if !bytes.Equal(js[0], js[1]) {
		t.Errorf("remote read and the query API give different reports:\n%s", lineDiff(js[0], js[1]))
	}
	return rep
}

// lineDiff shows the first differing lines of a and b.
func lineDiff(a, b []byte) string {
	al, bl := strings.Split(string(a), "\n"), strings.Split(string(b), "\n")
	for i := range max(len(al), len(bl)) {
		var x, y string
		if i < len(al) {
			x = al[i]
		}
		if i < len(bl) {
			y = bl[i]
		}
		if x != y {
			return fmt.Sprintf("line %d:\n  remote read: %s\n  query API:   %s", i+1, x, y)
		}
	}
	return "(same lines)"
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
	got, err := report.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := fixtureReport(t)
	wantJS, _ := report.Marshal(want)
	sameJSON(t, got, wantJS)

	// Analyzed days later (within the lookback), the report is the same.
	later := Config{PrometheusURL: srv.URL, RunID: "fixture-1", Params: fixtureParams(), Now: fixtureNow().Add(5 * 24 * time.Hour)}
	rl, _, err := Analyze(context.Background(), later)
	if err != nil {
		t.Fatal(err)
	}
	rl.GeneratedBy = ""
	laterJS, _ := report.Marshal(rl)
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
