package dashboards

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/promqltest"
	"github.com/prometheus/prometheus/storage"

	"github.com/joulemark/joulemark/internal/contract"
)

// engineRowPanels are the benchmark dashboard's panels on the engine's own
// metrics.
var engineRowPanels = []string{"Engine queue", "KV-cache usage", "Engine tokens and preemptions"}

// engineFixture is one engine on node n1 publishing each of its gauges and
// counters of internal/contract under its own names: gauges at 2 (0.5 for
// the KV cache), counters rising 200 per 5 s.
func engineFixture(engine string) string {
	n := int(evalEnd / evalStep)
	var b strings.Builder
	fmt.Fprintf(&b, "load %s\n", model.Duration(evalStep))
	el := `node="n1", instance="n1:8000", job="inference-engine", model_name="m"`
	for _, m := range contract.EngineMetricsOf(engine) {
		switch {
		case m.Role == contract.RoleKVCache:
			fmt.Fprintf(&b, "  %s{%s} 0.5x%d\n", m.Name, el, n)
		case m.Type == "gauge":
			fmt.Fprintf(&b, "  %s{%s} 2x%d\n", m.Name, el, n)
		case m.Type == "counter":
			fmt.Fprintf(&b, "  %s{%s} 0+200x%d\n", m.Name, el, n)
		}
	}
	return b.String()
}

// TestEngineRowEitherEngine runs the benchmark dashboard's engine row on
// vLLM-named data and on SGLang-named data: every query returns series
// with the figure the fixture holds, whichever engine serves.
func TestEngineRowEitherEngine(t *testing.T) {
	d := load(t, renderedFile(t, "benchmark-run.json"))
	exprs, err := expressions(d)
	if err != nil {
		t.Fatal(err)
	}
	vars := variables(d)
	maps.Copy(vars, map[string]string{"__rate_interval": "1m", "__interval": "15s", "__range": "20m", "node": ".*"})
	var row []string
	for _, where := range slices.Sorted(maps.Keys(exprs)) {
		for _, p := range engineRowPanels {
			if strings.HasPrefix(where, fmt.Sprintf("panel %q ", p)) {
				row = append(row, where)
			}
		}
	}
	if len(row) != 6 {
		t.Fatalf("the engine row has queries %q, want 6", row)
	}
	for _, engine := range contract.Engines {
		st := promqltest.LoadedStorage(t, engineFixture(engine))
		pe := promqltest.NewTestEngine(t, false, 5*time.Minute, promqltest.DefaultMaxSamplesPerQuery)
		for _, where := range row {
			s, err := substitute(exprs[where], vars)
			if err != nil {
				t.Fatal(err)
			}
			got, err := instant(pe, st, s)
			if err != nil {
				t.Errorf("%s data: %s: %v\n  %s", engine, where, err, s)
				continue
			}
			want := map[string]float64{"Engine queue": 2, "KV-cache usage": 0.5, "Engine tokens and preemptions": 40}
			title, _, _ := strings.Cut(strings.TrimPrefix(where, `panel "`), `"`)
			if len(got) != 1 || got[0] < want[title]*0.999 || got[0] > want[title]*1.001 {
				t.Errorf("%s data: %s = %v, want one series at %g\n  %s", engine, where, got, want[title], s)
			}
		}
	}
}

// instant evaluates expr at the fixture's end and returns its values.
func instant(pe *promql.Engine, st storage.Queryable, expr string) ([]float64, error) {
	q, err := pe.NewInstantQuery(context.Background(), st, nil, expr, time.Unix(0, 0).Add(evalEnd))
	if err != nil {
		return nil, err
	}
	defer q.Close()
	vec, err := q.Exec(context.Background()).Vector()
	if err != nil {
		return nil, err
	}
	var out []float64
	for _, s := range vec {
		out = append(out, s.F)
	}
	return out, nil
}

// renderedFile is one freshly rendered dashboard, by file name.
func renderedFile(t *testing.T, name string) File {
	t.Helper()
	for _, f := range render(t) {
		if f.Name == name {
			return f
		}
	}
	t.Fatalf("no dashboard %s", name)
	return File{}
}
