package dashboards

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/promqltest"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/prometheus/prometheus/util/teststorage"

	"github.com/joulemark/joulemark/internal/remotewrite"
	"github.com/joulemark/joulemark/internal/testkit/realprom"
)

// storedSamples are every float sample in st (the fixture and the
// recording rules' results), shifted by offset.
func storedSamples(t *testing.T, st *teststorage.TestStorage, offset time.Duration) []remotewrite.Sample {
	t.Helper()
	q, err := st.Querier(math.MinInt64, math.MaxInt64)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	set := q.Select(context.Background(), false, nil, labels.MustNewMatcher(labels.MatchRegexp, model.MetricNameLabel, ".+"))
	var out []remotewrite.Sample
	for set.Next() {
		s := set.At()
		lbls := s.Labels().Map()
		it := s.Iterator(nil)
		for it.Next() == chunkenc.ValFloat {
			ts, v := it.At()
			if !math.IsNaN(v) {
				out = append(out, remotewrite.Sample{Labels: lbls, Value: v, TimestampMs: ts + offset.Milliseconds()})
			}
		}
	}
	if err := set.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestQueriesEvaluateVictoriaMetrics runs every dashboard query, annotation
// and variable selector against a real VictoriaMetrics holding the
// fixture and the recording rules' results (evaluated by Prometheus'
// engine, as vmalert or Prometheus would record them), remote-written an
// hour ago: each returns data, and each instant query the values
// Prometheus gives (the fixture's counters grow steadily from before the
// windows, where rate() agrees; see TestVictoriaMetricsIncrease).
func TestQueriesEvaluateVictoriaMetrics(t *testing.T) {
	srv := realprom.StartVictoriaMetrics(t)
	st := promqltest.LoadedStorage(t, fixture())
	engine := promqltest.NewTestEngine(t, false, 5*time.Minute, promqltest.DefaultMaxSamplesPerQuery)
	evalRules(t, st, engine)
	base := time.Now().Add(-time.Hour).Truncate(time.Minute)
	offset := base.Sub(time.Unix(0, 0))
	samples := storedSamples(t, st, offset)
	w, err := remotewrite.New(remotewrite.Config{URL: srv.URL + "/api/v1/write", BatchSize: 5000, BufferSize: len(samples) + 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range samples {
		w.Append(s)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if st, err := w.Close(ctx); err != nil || st.Lost() > 0 {
		t.Fatalf("remote write: %+v %v", st, err)
	}
	srv.Flush(t)
	client, err := api.NewClient(api.Config{Address: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	vm := v1.NewAPI(client)
	values := map[string]string{
		"__rate_interval": "1m", "__interval": "15s", "__range": "20m",
		"node": ".*", "gpu": ".*", "run_id": "r1", "namespace": ".*", "pod": ".*", "model": ".*",
	}
	compared := 0
	for _, f := range render(t) {
		d := load(t, f)
		exprs, err := expressions(d)
		if err != nil {
			t.Fatal(err)
		}
		instant := instantQueries(d)
		vars := variables(d)
		for k, v := range values {
			if _, defined := vars[k]; defined || strings.HasPrefix(k, "__") {
				vars[k] = v
			}
		}
		for _, where := range slices.Sorted(maps.Keys(exprs)) {
			s, err := substitute(exprs[where], vars)
			if err != nil {
				t.Fatal(err)
			}
			name := f.Name + ": " + where
			if instant[where] || strings.HasPrefix(where, "variable ") {
				compared += sameInstant(ctx, t, name, s, vm, base.Add(evalEnd), engine, st)
				continue
			}
			r := v1.Range{Start: base.Add(evalEnd / 2), End: base.Add(evalEnd), Step: 15 * time.Second}
			v, _, _, err := vm.QueryRange(ctx, s, r)
			if err != nil {
				t.Errorf("%s: VictoriaMetrics: %v\n  %s", name, err, s)
			} else if m, _ := v.(model.Matrix); len(m) == 0 {
				t.Errorf("%s: no data from VictoriaMetrics\n  %s", name, s)
			}
		}
	}
	if compared == 0 {
		t.Error("no instant query's value was compared with Prometheus'")
	}
	t.Logf("%d instant values compared with Prometheus'", compared)
}

// sameInstant evaluates the instant query s at at in VictoriaMetrics and
// in Prometheus' engine (the same instant in the unshifted fixture) and
// compares the series' values.
func sameInstant(ctx context.Context, t *testing.T, name, s string, vm v1.API, at time.Time, engine *promql.Engine, st *teststorage.TestStorage) (compared int) {
	t.Helper()
	v, _, _, err := vm.Query(ctx, s, at)
	if err != nil {
		t.Errorf("%s: VictoriaMetrics: %v\n  %s", name, err, s)
		return 0
	}
	got, _ := v.(model.Vector)
	if len(got) == 0 {
		t.Errorf("%s: no data from VictoriaMetrics\n  %s", name, s)
		return 0
	}
	q, err := engine.NewInstantQuery(ctx, st, nil, s, time.Unix(0, 0).Add(evalEnd))
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	want, err := q.Exec(ctx).Vector()
	if err != nil {
		return 0 // a scalar or a string: only the presence of data is checked
	}
	wantBy := map[string]float64{}
	for _, smp := range want {
		m := model.Metric{}
		for k, v := range smp.Metric.Map() {
			m[model.LabelName(k)] = model.LabelValue(v)
		}
		wantBy[m.String()] = smp.F
	}
	const tol = 1e-9
	for _, smp := range got {
		key := smp.Metric.String()
		w, ok := wantBy[key]
		if !ok {
			t.Logf("%s: %s only in VictoriaMetrics' answer (Prometheus': %v)", name, key, slices.Collect(maps.Keys(wantBy)))
			continue
		}
		compared++
		if g := float64(smp.Value); math.Abs(g-w) > tol*math.Max(math.Abs(w), 1e-12) {
			t.Errorf("%s %s: VictoriaMetrics %g, Prometheus %g\n  %s", name, key, g, w, s)
		}
	}
	return compared
}

// TestVictoriaMetricsIncrease documents where VictoriaMetrics' increase()
// differs from Prometheus': a counter 100, 110, …, 150 every 10 s, read by
// increase(c[1m]) 5 s after its last sample. Prometheus extrapolates the
// 50 J between the first and last sample in the window to the window's
// edges (towards zero at most): 60; VictoriaMetrics takes the last
// sample before the window as the start and, for a series that starts
// inside it, counts its first value (a new counter starts at zero): 150.
// Inside a series' life the two agree
// (TestQueriesEvaluateVictoriaMetrics); in the first window of a pod's
// or a run's counter VictoriaMetrics shows its whole value.
func TestVictoriaMetricsIncrease(t *testing.T) {
	srv := realprom.StartVictoriaMetrics(t)
	base := time.Now().Add(-time.Hour).Truncate(time.Minute)
	var in []remotewrite.Sample
	load := "load 10s\n  c "
	for i := range 6 {
		in = append(in, remotewrite.Sample{Labels: map[string]string{"__name__": "c"}, Value: float64(100 + 10*i), TimestampMs: base.Add(time.Duration(i) * 10 * time.Second).UnixMilli()})
		load += fmt.Sprintf("%d ", 100+10*i)
	}
	w, err := remotewrite.New(remotewrite.Config{URL: srv.URL + "/api/v1/write"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range in {
		w.Append(s)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if st, err := w.Close(ctx); err != nil || st.Lost() > 0 {
		t.Fatalf("remote write: %+v %v", st, err)
	}
	srv.Flush(t)
	client, err := api.NewClient(api.Config{Address: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	v, _, _, err := v1.NewAPI(client).Query(ctx, "increase(c[1m])", base.Add(55*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	st := promqltest.LoadedStorage(t, load)
	engine := promqltest.NewTestEngine(t, false, 5*time.Minute, promqltest.DefaultMaxSamplesPerQuery)
	q, err := engine.NewInstantQuery(ctx, st, nil, "increase(c[1m])", time.Unix(55, 0))
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	want, err := q.Exec(ctx).Vector()
	if err != nil || len(want) != 1 {
		t.Fatalf("Prometheus: %v %v", want, err)
	}
	got, _ := v.(model.Vector)
	if len(got) != 1 {
		t.Fatalf("VictoriaMetrics: %v", v)
	}
	if want[0].F != 60 || float64(got[0].Value) != 150 {
		t.Errorf("increase(c[1m]): Prometheus %g, VictoriaMetrics %g; documented: 60 and 150 (docs/deploy.md)", want[0].F, float64(got[0].Value))
	}
}
