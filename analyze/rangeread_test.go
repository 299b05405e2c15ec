package analyze

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	"github.com/joulemark/joulemark/internal/testkit/testenv"
	"github.com/joulemark/joulemark/report"

	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/config"

	"github.com/joulemark/joulemark/internal/remoteread"
	"github.com/joulemark/joulemark/internal/testkit/realprom"
)

func TestSplitSpan(t *testing.T) {
	tests := []struct {
		end, rng, chunk int64
		want            []window
	}{
		{1000, 300, 1000, []window{{1000, 300, true}}},
		{1000, 300, 300, []window{{1000, 300, true}}},
		{1000, 300, 100, []window{{800, 100, true}, {900, 100, false}, {1000, 100, false}}},
		{1000, 250, 100, []window{{850, 100, true}, {950, 100, false}, {1000, 50, false}}},
		{1000, 0, 100, []window{{1000, 1, true}}}, // at least 1 ms, as promDuration
	}
	for _, tt := range tests {
		got := splitSpan(tt.end, tt.rng, tt.chunk)
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("splitSpan(%d, %d, %d) = %v, want %v", tt.end, tt.rng, tt.chunk, got, tt.want)
		}
	}
	// keep: a window after the first drops its start (Prometheus 2 returns
	// it, closed on the left); the first keeps whatever the server returns.
	ws := splitSpan(1000, 300, 100)
	if !ws[0].keep(700) || ws[1].keep(800) || !ws[1].keep(801) || !ws[1].keep(900) {
		t.Errorf("keep: window bounds wrong: %v", ws)
	}
	if got := ws[1].selector(`m{a="b"}`); got != `m{a="b"}[100ms]` {
		t.Errorf("selector = %s", got)
	}
}

func TestInOrder(t *testing.T) {
	const n, par = 40, 3
	var inFlight, peak atomic.Int32
	var merged []int
	err := inOrder(context.Background(), n, par, func(ctx context.Context, i int) (int, error) {
		c := inFlight.Add(1)
		for {
			p := peak.Load()
			if c <= p || peak.CompareAndSwap(p, c) {
				break
			}
		}
		time.Sleep(time.Duration(rand.IntN(300)) * time.Microsecond)
		inFlight.Add(-1)
		return i * i, nil
	}, func(i, v int) error {
		if v != i*i {
			return fmt.Errorf("result %d for %d", v, i)
		}
		merged = append(merged, i)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(merged) != n {
		t.Fatalf("merged %d results, want %d", len(merged), n)
	}
	for i, v := range merged {
		if v != i {
			t.Fatalf("merge order %v", merged)
		}
	}
	if p := peak.Load(); p > par {
		t.Errorf("%d fetches in flight, want at most %d", p, par)
	}

	// A failed fetch stops the rest and its error is returned; no fetch
	// outlives inOrder.
	boom := errors.New("boom")
	var started, running atomic.Int32
	err = inOrder(context.Background(), n, par, func(ctx context.Context, i int) (int, error) {
		started.Add(1)
		running.Add(1)
		defer running.Add(-1)
		if i == 5 {
			return 0, boom
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(time.Millisecond):
			return i, nil
		}
	}, func(int, int) error { return nil })
	if !errors.Is(err, boom) {
		t.Errorf("err = %v, want boom", err)
	}
	if r := running.Load(); r != 0 {
		t.Errorf("%d fetches still running after inOrder returned", r)
	}
	if s := started.Load(); s > 5+par {
		t.Errorf("%d fetches started after the failure at 5 (par %d)", s, par)
	}
	// A failed merge too.
	err = inOrder(context.Background(), n, par, func(ctx context.Context, i int) (int, error) { return i, nil },
		func(i, _ int) error {
			if i == 2 {
				return boom
			}
			return nil
		})
	if !errors.Is(err, boom) {
		t.Errorf("merge error: err = %v, want boom", err)
	}
}

// testLoader reads the fixture run from url in windows of chunk, par at a
// time, its raw series through the query API.
func testLoader(t *testing.T, url string, chunk time.Duration, par int) *loader {
	t.Helper()
	c, err := api.NewClient(api.Config{Address: url})
	if err != nil {
		t.Fatal(err)
	}
	return &loader{api: v1.NewAPI(c), runID: "fixture-1", lookback: DefaultLookback, now: fixtureNow(), timeout: 30 * time.Second, chunk: chunk, par: par}
}

// remoteLoader is testLoader reading the raw series through remote read.
func remoteLoader(t *testing.T, url string, chunk time.Duration, par int) *loader {
	t.Helper()
	l := testLoader(t, url, chunk, par)
	var err error
	if l.rr, err = remoteread.New(url, config.HTTPClientConfig{}, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	l.readAPI = remoteread.Remote
	return l
}

// checkChunkedLoad loads the fixture run in one window and in windows of 5 s
// and 7 s and checks they read the same data, and that it is the fixture's.
// The fixture's samples lie on whole seconds, as do the 5 s windows' bounds:
// a server that returns the left bound (Prometheus 2) would count them twice
// without the reader's bound handling.
func checkChunkedLoad(t *testing.T, url string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	whole, err := testLoader(t, url, 24*time.Hour, 1).load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := fixture()
	if len(whole.Requests) != len(want.Requests) || len(whole.GPUs) != len(want.GPUs) || len(whole.GPUs[0].Energy) != len(want.GPUs[0].Energy) {
		t.Fatalf("one window: read %d requests, %d GPUs, %d counter samples; want %d, %d, %d",
			len(whole.Requests), len(whole.GPUs), len(whole.GPUs[0].Energy), len(want.Requests), len(want.GPUs), len(want.GPUs[0].Energy))
	}
	type read struct {
		chunk  time.Duration
		remote bool
	}
	for _, rd := range []read{{5 * time.Second, false}, {7 * time.Second, false}, {24 * time.Hour, true}, {5 * time.Second, true}, {7 * time.Second, true}} {
		chunk := rd.chunk
		mk := testLoader
		if rd.remote {
			mk = remoteLoader
		}
		got, err := mk(t, url, chunk, 3).load(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if rd.remote {
			if got.ReadAPI != remoteread.Remote {
				t.Fatalf("read through %s, want remote read", got.ReadAPI)
			}
			got.ReadAPI = remoteread.Query // the only difference allowed
		}
		if !reflect.DeepEqual(got, whole) {
			t.Errorf("windows of %s (remote read %v): read %d requests (%d incomplete), %d GPUs (%d, %d counter samples); one window: %d (%d), %d (%d, %d)", chunk,
				rd.remote, len(got.Requests), got.IncompleteRequests, len(got.GPUs), len(got.GPUs[0].Energy), len(got.GPUs[0].Power),
				len(whole.Requests), whole.IncompleteRequests, len(whole.GPUs), len(whole.GPUs[0].Energy), len(whole.GPUs[0].Power))
		}
		r, _, err := computeSeries(got, fixtureParams())
		if err != nil {
			t.Fatal(err)
		}
		js, _ := report.Marshal(r)
		wantR, _ := fixtureReport(t)
		wantJS, _ := report.Marshal(wantR)
		sameJSON(t, js, wantJS)
	}
}

// TestChunkedReadTSDB: windowed reads from the embedded Prometheus 3 TSDB
// (left-open range selectors) read every sample once.
func TestChunkedReadTSDB(t *testing.T) {
	s := startPromserver(t)
	if err := s.AppendSamples(context.Background(), fixtureSamples(fixture())); err != nil {
		t.Fatal(err)
	}
	checkChunkedLoad(t, s.URL())
}

// TestChunkedReadRealPrometheus: the same against Debian's Prometheus 2.42,
// whose range selectors are closed on the left.
func TestChunkedReadRealPrometheus(t *testing.T) {
	testenv.SkipIfShort(t, "starts a Prometheus server")
	srv := realprom.Start(t, "")
	pushRemoteWrite(t, srv.URL+"/api/v1/write", fixtureSamples(fixture()))
	checkChunkedLoad(t, srv.URL)
}
