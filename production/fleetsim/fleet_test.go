package fleetsim

import (
	"context"
	"math"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/common/config"

	"github.com/joulemark/joulemark/internal/promserver"
	"github.com/joulemark/joulemark/production"
)

// TestFleetAnalyzeProduction writes a small fleet (2 nodes × 1 h, pods
// rolling over every 20 min) and checks that analyze production, reading
// it from the embedded Prometheus, reports each model's exact energy and
// tokens.
func TestFleetAnalyzeProduction(t *testing.T) {
	end := time.Now().Add(-time.Hour).Truncate(time.Hour)
	f, err := New(Config{Nodes: 2, Models: 5, Namespaces: 2, From: end.Add(-time.Hour), To: end, PodLifetime: 20 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "tsdb")
	st, err := f.Write(context.Background(), dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if st.Series == 0 || st.Samples < int64(16*3600*9) {
		t.Fatalf("wrote %+v, want at least 9 series of 16 GPUs every second", st)
	}
	s, err := promserver.Start(context.Background(), promserver.Options{Dir: dir, ReadOnly: true, DisableRemoteWrite: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	from, to := end.Add(-50*time.Minute), end.Add(-2*time.Minute)
	r, err := production.Run(context.Background(), production.Config{PrometheusURL: s.URL(),
		HTTP: config.DefaultHTTPClientConfig, From: from, To: to})
	if err != nil {
		t.Fatal(err)
	}
	want := f.Totals(from, to)
	if len(r.Models) != len(want) {
		t.Errorf("%d models reported, %d in the fleet", len(r.Models), len(want))
	}
	starts := 0
	for _, m := range r.Models {
		w := want[m.Model]
		if !near(m.EnergyJoules, w.EnergyJoules) || !near(m.OutputTokens, w.OutputTokens) {
			t.Errorf("%s: %v J, %v tokens; the fleet's %v J, %v tokens", m.Model, m.EnergyJoules, m.OutputTokens, w.EnergyJoules, w.OutputTokens)
		}
		starts += m.Starts
	}
	if starts == 0 {
		t.Error("no pod start reported: the pods did not roll over")
	}
	if r.UnallocatedJoules <= 0 {
		t.Error("no unallocated energy between pods")
	}
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(math.Abs(b), 1) }
