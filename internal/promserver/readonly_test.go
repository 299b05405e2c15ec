package promserver

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang/snappy"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/prometheus/config"
	"github.com/prometheus/prometheus/prompb"
	"github.com/prometheus/prometheus/storage/remote"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
)

// dirState is every path under dir with its mode and, for files, a hash
// of the content.
func dirState(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		state := fi.Mode().String()
		if fi.Mode().IsRegular() {
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			state += fmt.Sprintf(" %x", sha256.Sum256(b))
		}
		out[rel] = state
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func diffStates(a, b map[string]string) []string {
	var d []string
	for _, k := range slices.Sorted(maps.Keys(a)) {
		if b[k] != a[k] {
			d = append(d, fmt.Sprintf("%s: %q -> %q", k, a[k], b[k]))
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			d = append(d, fmt.Sprintf("%s: new %q", k, b[k]))
		}
	}
	return d
}

// savedRun writes a TSDB as a finished run leaves it (WAL and head chunks,
// closed) and returns its directory and the first sample's time.
func savedRun(t *testing.T) (string, time.Time) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "tsdb")
	first := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	s, err := Start(context.Background(), Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	// 600 samples a series: full head chunks (120 samples) are cut and
	// memory-mapped under chunks_head, as in a real run
	for _, slot := range []string{"1", "2", "3"} {
		if err := s.AppendSamples(context.Background(), requestSamples(slot, first, 600)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return dir, first
}

// TestReadOnlyWritesNothing: a read-only server answers queries on a saved
// run, concurrently, and leaves its directory byte-identical (no lock
// file, WAL segment or sandbox), where a writable one changes it.
func TestReadOnlyWritesNothing(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp) // the sandbox goes here, and must go away
	dir, first := savedRun(t)
	if ents, err := os.ReadDir(filepath.Join(dir, "chunks_head")); err != nil || len(ents) == 0 {
		t.Fatalf("the saved run has no head chunks (%v): the test would not cover them", err)
	}
	before := dirState(t, dir)

	s, err := Start(context.Background(), Options{Dir: dir, ReadOnly: true, DisableRemoteWrite: true})
	if err != nil {
		t.Fatal(err)
	}
	papi := promAPI(t, s)
	var wg sync.WaitGroup
	errs := make(chan error, 40)
	for g := range 8 {
		wg.Go(func() {
			slot := fmt.Sprint(g%3 + 1)
			for range 5 {
				v, _, _, err := papi.Query(context.Background(), `sum_over_time(joulemark_request_output_tokens{slot="`+slot+`"}[20m])`, first.Add(599*time.Second))
				if err == nil && !strings.Contains(v.String(), fmt.Sprintf("=> %d @", 600*100+599*600/2)) {
					err = fmt.Errorf("slot %s: %s", slot, v)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Go(func() {
		r, _, _, err := papi.QueryRange(context.Background(), `joulemark_request_output_tokens`, v1.Range{Start: first, End: first.Add(10 * time.Minute), Step: time.Minute})
		if err == nil && !strings.Contains(r.String(), "699 @") {
			err = fmt.Errorf("range query: %s", r)
		}
		if err != nil {
			errs <- err
		}
		names, _, _, err := papi.LabelValues(context.Background(), "slot", nil, first, first.Add(time.Hour))
		if err == nil && len(names) != 3 {
			err = fmt.Errorf("slot values %v", names)
		}
		if err != nil {
			errs <- err
		}
	})
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if err := s.AppendSamples(context.Background(), requestSamples("9", first, 1)); err == nil {
		t.Error("AppendSamples on a read-only server succeeded")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if d := diffStates(before, dirState(t, dir)); len(d) > 0 {
		t.Errorf("serving read-only changed the saved run:\n%s", strings.Join(d, "\n"))
	}
	if left, _ := os.ReadDir(tmp); len(left) > 0 {
		var names []string
		for _, e := range left {
			names = append(names, e.Name())
		}
		t.Errorf("left behind in TMPDIR: %v", names)
	}

	// the check above is not vacuous: a writable open changes the directory
	w, err := Start(context.Background(), Options{Dir: dir, DisableRemoteWrite: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if d := diffStates(before, dirState(t, dir)); len(d) == 0 {
		t.Error("a writable open left the directory as it was: the read-only check proves nothing")
	}
}

func TestReadOnlyOptions(t *testing.T) {
	dir, _ := savedRun(t)
	for _, o := range []Options{
		{Dir: dir, ReadOnly: true},
		{Dir: dir, ReadOnly: true, DisableRemoteWrite: true, ScrapeTargets: []Target{{Job: "x", URL: "http://127.0.0.1:1/metrics"}}},
		{Dir: t.TempDir(), ReadOnly: true, DisableRemoteWrite: true}, // no TSDB there
	} {
		if s, err := Start(context.Background(), o); err == nil {
			_ = s.Close()
			t.Errorf("%+v: started", o)
		}
	}
}

// TestReadOnlyRemoteRead: remote read, samples and streamed chunks, serves
// the saved run's samples from a read-only server.
func TestReadOnlyRemoteRead(t *testing.T) {
	dir, first := savedRun(t)
	s := startServer(t, Options{Dir: dir, ReadOnly: true, DisableRemoteWrite: true})
	for _, typ := range []prompb.ReadRequest_ResponseType{prompb.ReadRequest_SAMPLES, prompb.ReadRequest_STREAMED_XOR_CHUNKS} {
		req := &prompb.ReadRequest{
			Queries: []*prompb.Query{{
				StartTimestampMs: first.UnixMilli(), EndTimestampMs: first.Add(time.Hour).UnixMilli(),
				Matchers: []*prompb.LabelMatcher{
					{Type: prompb.LabelMatcher_EQ, Name: "__name__", Value: "joulemark_request_output_tokens"},
					{Type: prompb.LabelMatcher_EQ, Name: "slot", Value: "2"},
				},
			}},
			AcceptedResponseTypes: []prompb.ReadRequest_ResponseType{typ},
		}
		raw, err := req.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.Post(s.URL()+"/api/v1/read", "application/x-protobuf", bytes.NewReader(snappy.Encode(nil, raw)))
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("%v: %d %v %s", typ, resp.StatusCode, err, body)
		}
		samples := 0
		if typ == prompb.ReadRequest_SAMPLES {
			dec, err := snappy.Decode(nil, body)
			if err != nil {
				t.Fatal(err)
			}
			var rr prompb.ReadResponse
			if err := rr.Unmarshal(dec); err != nil {
				t.Fatal(err)
			}
			for _, ts := range rr.Results[0].Timeseries {
				samples += len(ts.Samples)
			}
		} else {
			cr := remote.NewChunkedReader(bytes.NewReader(body), config.DefaultChunkedReadLimit, nil)
			for {
				var part prompb.ChunkedReadResponse
				if err := cr.NextProto(&part); errors.Is(err, io.EOF) {
					break
				} else if err != nil {
					t.Fatal(err)
				}
				for _, cs := range part.ChunkedSeries {
					for _, c := range cs.Chunks {
						ch, err := chunkenc.FromData(chunkenc.EncXOR, c.Data)
						if err != nil {
							t.Fatal(err)
						}
						samples += ch.NumSamples()
					}
				}
			}
		}
		if samples != 600 {
			t.Errorf("%v: %d samples of slot 2, want 600", typ, samples)
		}
	}
}

// TestInUse: a writable server takes the TSDB's lock file, which InUse
// reports as held; once it closed, its own WAL does not count as in use;
// a WAL written recently by anything else does, an old one does not.
func TestInUse(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tsdb")
	s, err := Start(context.Background(), Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if why, err := InUse(dir, 5*time.Minute, now); err != nil || !strings.Contains(why, "lock file") {
		t.Errorf("while a server has it open: %q, %v; want the lock file held", why, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if why, err := InUse(dir, 5*time.Minute, time.Now()); err != nil || why != "" {
		t.Errorf("after the server closed it: %q, %v; want free", why, err)
	}
	seg := filepath.Join(dir, "wal", "00000099")
	if err := os.WriteFile(seg, []byte("x"), 0o644); err != nil { // another writer
		t.Fatal(err)
	}
	if why, err := InUse(dir, 5*time.Minute, time.Now()); err != nil || !strings.Contains(why, "WAL was written") {
		t.Errorf("WAL written by another process just now: %q, %v; want in use", why, err)
	}
	if why, _ := InUse(dir, 5*time.Minute, time.Now().Add(10*time.Minute)); why != "" {
		t.Errorf("WAL written 10 minutes ago: %q, want free", why)
	}
}

// TestReadOnlyQueryAfterTheData: an instant query whose lookback holds no
// sample of a series the head lists (after the run's end, where `tsdb
// serve` users and analyze's "now" land) answers nothing, not a PromQL
// runtime panic; a range over the data still finds it.
func TestReadOnlyQueryAfterTheData(t *testing.T) {
	dir, first := savedRun(t)
	s := startServer(t, Options{Dir: dir, ReadOnly: true, DisableRemoteWrite: true})
	papi := promAPI(t, s)
	after := first.Add(30 * time.Minute) // the data spans 10 min; lookback 5 min
	for _, q := range []string{`joulemark_request_output_tokens`, `count(joulemark_request_output_tokens)`,
		`min(timestamp(joulemark_request_output_tokens))`} {
		v, _, _, err := papi.Query(context.Background(), q, after)
		if err != nil || v.String() != "" {
			t.Errorf("%s after the data: %q, %v; want nothing and no error", q, v, err)
		}
	}
	v, _, _, err := papi.Query(context.Background(), `count(max_over_time(joulemark_request_output_tokens[1h]))`, after)
	if err != nil || !strings.Contains(v.String(), "=> 3 @") {
		t.Errorf("range over the data: %v, %v; want its 3 series", v, err)
	}
}
