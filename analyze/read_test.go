package analyze

import (
	"context"
	"math"
	"testing"
	"time"

	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"

	"github.com/joulemark/joulemark/internal/promquery"
	"github.com/joulemark/joulemark/report"
)

// queryRecorder is a Prometheus API that answers every instant query
// with one series of value 300 and keeps what it was asked.
type queryRecorder struct {
	v1.API
	queries []string
	at      []time.Time
}

func (q *queryRecorder) Query(_ context.Context, query string, ts time.Time, _ ...v1.Option) (model.Value, v1.Warnings, v1.Infos, error) {
	q.queries, q.at = append(q.queries, query), append(q.at, ts)
	return model.Vector{{Value: 300}}, nil, nil, nil
}

// TestCarbonOverRunSpansTheStages: the read step averages the carbon
// query over the span of the report's stages, which it knows from the
// phases before anything is computed; a constant is taken as it is.
func TestCarbonOverRunSpansTheStages(t *testing.T) {
	d := fixture()
	r, _, err := computeSeries(fixture(), fixtureParams())
	if err != nil {
		t.Fatal(err)
	}
	from, to := math.Inf(1), math.Inf(-1)
	for _, st := range r.Stages {
		from, to = min(from, st.Start), max(to, st.End)
	}
	var want, got queryRecorder
	if _, err := promquery.AverageOver(t.Context(), &want, "grid", from, to); err != nil {
		t.Fatal(err)
	}
	v, err := carbonOverRun(t.Context(), &got, report.CostInputs{CarbonQuery: "grid"}, d)
	if err != nil || v == nil || *v != 300 {
		t.Fatalf("carbon %v, %v", deref(v), err)
	}
	if len(got.queries) != 1 || got.queries[0] != want.queries[0] || !got.at[0].Equal(want.at[0]) {
		t.Errorf("queried %q at %v, want %q at %v", got.queries, got.at, want.queries, want.at)
	}
	var none queryRecorder
	if v, err := carbonOverRun(t.Context(), &none, report.CostInputs{CarbonIntensity: new(42.0)}, d); err != nil || v == nil || *v != 42 || len(none.queries) != 0 {
		t.Errorf("constant: %v, %v, %d queries", deref(v), err, len(none.queries))
	}
}

// TestComputeWholeReport: Compute alone makes the whole report from one
// input: the series' sections, the archive's, the scenario, the version
// and the cost with the carbon intensity read beside the series. The same
// input gives the same report.
func TestComputeWholeReport(t *testing.T) {
	arch := fixtureArchive(t, fixture())
	in := func() Input {
		d := fixture()
		if err := arch.fillRun(d); err != nil {
			t.Fatal(err)
		}
		return Input{Run: d, Archive: arch, Carbon: new(400.0), Scenario: "chat", GeneratedBy: "joulemark test"}
	}
	cost := report.CostInputs{PricePerKWh: new(0.2), CarbonQuery: "grid"}
	r, pd, err := Compute(in(), fixtureParams(), cost)
	if err != nil || pd == nil {
		t.Fatal(err)
	}
	switch {
	case r.OutputSanity == nil:
		t.Error("no output_sanity from the archive")
	case r.Scenario != "chat" || r.GeneratedBy != "joulemark test":
		t.Errorf("scenario %q, generated_by %q", r.Scenario, r.GeneratedBy)
	case r.Cost == nil || r.Cost.CarbonGramsPerKWh == nil || *r.Cost.CarbonGramsPerKWh != 400 || r.Cost.CarbonSource != "grid":
		t.Errorf("cost %+v", r.Cost)
	}
	again, _, err := Compute(in(), fixtureParams(), cost)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := report.Marshal(r)
	b, _ := report.Marshal(again)
	sameJSON(t, b, a)
}
