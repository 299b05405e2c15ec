package fleetsim

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/rules"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb"

	"github.com/joulemark/joulemark/dashboards"
	"github.com/joulemark/joulemark/internal/contract"
	"github.com/joulemark/joulemark/internal/promserver"
)

// newEngine is a PromQL engine with the embedded Prometheus' limits.
func newEngine() *promql.Engine {
	return promql.NewEngine(promql.EngineOpts{Logger: slog.New(slog.DiscardHandler), MaxSamples: promserver.DefaultMaxSamples,
		Timeout: promserver.DefaultQueryTimeout, LookbackDelta: promserver.DefaultLookbackDelta, EnableAtModifier: true})
}

// openFleet opens the fleet's TSDB read-only.
func openFleet(j job) (*tsdb.DBReadOnly, func(), error) {
	sandbox, err := os.MkdirTemp("", "fleetsim")
	if err != nil {
		return nil, nil, err
	}
	db, err := tsdb.OpenDBReadOnly(j.Dir, sandbox, slog.New(slog.DiscardHandler))
	if err != nil {
		return nil, nil, fmt.Errorf("opening %s: %w", j.Dir, err)
	}
	return db, func() { db.Close(); os.RemoveAll(sandbox) }, nil
}

// measure runs one query and returns its cost.
func measure(ctx context.Context, q promql.Query, name string) queryCost {
	defer q.Close()
	start := time.Now()
	res := q.Exec(ctx)
	c := queryCost{Name: name, WallSeconds: time.Since(start).Seconds()}
	if st := q.Stats(); st != nil && st.Samples != nil {
		c.TotalSamples, c.PeakSamples = st.Samples.TotalSamples, st.Samples.PeakSamples
	}
	if res.Err != nil {
		c.Error = " " + res.Err.Error()
	}
	switch v := res.Value.(type) {
	case promql.Matrix:
		c.ResultSeries = len(v)
	case promql.Vector:
		c.ResultSeries = len(v)
	}
	return c
}

// analyzeReads are the selectors analyze production reads
// (production/load.go), each over the range and its margin.
var analyzeReads = []string{contract.PodEnergy, contract.GPUAllocationInfo, mTokens, "sglang:generation_tokens_total",
	contract.UnallocatedEnergy, contract.GPUInfo + `{energy_scope="module"}`}

// queryCosts measures analyze production's reads as range selectors (the
// samples each loads) and every panel and annotation query of the fleet
// dashboard over the range at its default resolution.
func queryCosts(ctx context.Context, j job) ([]queryCost, error) {
	db, done, err := openFleet(j)
	if err != nil {
		return nil, err
	}
	defer done()
	eng := newEngine()
	opts := promql.NewPrometheusQueryOpts(true, 0, nil)
	var out []queryCost
	span := j.ATo.Add(30 * time.Second).Sub(j.AFrom.Add(-5 * time.Minute))
	for _, sel := range analyzeReads {
		expr := fmt.Sprintf("%s[%dms]", sel, span.Milliseconds())
		q, err := eng.NewInstantQuery(ctx, db, opts, expr, j.ATo.Add(30*time.Second))
		if err != nil {
			return nil, err
		}
		out = append(out, measure(ctx, q, "analyze read "+sel))
	}
	targets, err := dashboards.Targets()
	if err != nil {
		return nil, err
	}
	vars, err := dashboards.Defaults("fleet-energy.json")
	if err != nil {
		return nil, err
	}
	for _, v := range []string{"node", "gpu", "namespace", "pod", "model", "run_id", "datasource"} {
		vars[v] = ".*"
	}
	view := dashboards.View{From: j.AFrom, To: j.ATo, MaxDataPoints: 1280, DataSourceInterval: time.Second}
	for _, t := range targets {
		if t.Dashboard != "fleet-energy.json" || t.Panel == "" && !strings.HasPrefix(t.Where, "annotation") {
			continue
		}
		expr, step, err := t.Expand(view, vars)
		if err != nil {
			return nil, err
		}
		var q promql.Query
		if t.Instant {
			q, err = eng.NewInstantQuery(ctx, db, opts, expr, j.ATo)
		} else {
			q, err = eng.NewRangeQuery(ctx, db, opts, expr, j.AFrom, j.ATo, step)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", t.Where, err)
		}
		out = append(out, measure(ctx, q, t.Where))
	}
	return out, nil
}

// ruleCosts evaluates each recording-rule group of file once at the end
// of the analyzed range, over the fleet, recording into a scratch TSDB
// (read back by the group's later rules), and measures each group.
func ruleCosts(ctx context.Context, j job, file string) ([]queryCost, error) {
	db, done, err := openFleet(j)
	if err != nil {
		return nil, err
	}
	defer done()
	scratchDir, err := os.MkdirTemp("", "fleetsim-rules")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(scratchDir)
	o := tsdb.DefaultOptions()
	o.OutOfOrderTimeWindow = (48 * time.Hour).Milliseconds()
	scratch, err := tsdb.Open(filepath.Join(scratchDir, "tsdb"), slog.New(slog.DiscardHandler), nil, o, nil)
	if err != nil {
		return nil, err
	}
	defer scratch.Close()
	both := storage.QueryableFunc(func(mint, maxt int64) (storage.Querier, error) {
		a, err := db.Querier(mint, maxt)
		if err != nil {
			return nil, err
		}
		b, err := scratch.Querier(mint, maxt)
		if err != nil {
			return nil, err
		}
		return storage.NewMergeQuerier([]storage.Querier{a, b}, nil, storage.ChainedSeriesMerge), nil
	})
	eng := newEngine()
	var cur *queryCost
	qf := func(ctx context.Context, qs string, t time.Time) (promql.Vector, error) {
		q, err := eng.NewInstantQuery(ctx, both, promql.NewPrometheusQueryOpts(true, 0, nil), qs, t)
		if err != nil {
			return nil, err
		}
		defer q.Close()
		res := q.Exec(ctx)
		if st := q.Stats(); st != nil && st.Samples != nil {
			cur.TotalSamples += st.Samples.TotalSamples
			cur.PeakSamples = max(cur.PeakSamples, st.Samples.PeakSamples)
		}
		if res.Err != nil {
			return nil, res.Err
		}
		switch v := res.Value.(type) {
		case promql.Vector:
			cur.ResultSeries += len(v)
			return v, nil
		case promql.Scalar:
			return promql.Vector{promql.Sample{T: v.T, F: v.V}}, nil
		}
		return nil, fmt.Errorf("rule %q: result %s", qs, res.Value.Type())
	}
	m := rules.NewManager(&rules.ManagerOptions{AppendableV2: scratch, Queryable: both, QueryFunc: qf, Context: ctx,
		Logger: slog.New(slog.DiscardHandler), NotifyFunc: func(context.Context, string, ...*rules.Alert) {}})
	groups, errs := m.LoadGroups(5*time.Second, labels.EmptyLabels(), "", nil, false, file)
	if len(errs) > 0 {
		return nil, fmt.Errorf("loading %s: %v", file, errs)
	}
	var out []queryCost
	for _, g := range groups {
		cur = &queryCost{Name: "group " + g.Name()}
		start := time.Now()
		g.Eval(ctx, j.ATo)
		cur.WallSeconds = time.Since(start).Seconds()
		for _, r := range g.Rules() {
			if err := r.LastError(); err != nil {
				cur.Error += " " + r.Name() + ": " + err.Error()
			}
		}
		out = append(out, *cur)
	}
	return out, nil
}
