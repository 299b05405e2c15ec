package dashboards

import "github.com/joulemark/joulemark/internal/contract"

// The metric names the dashboards may query. A test parses every PromQL
// expression of every dashboard and fails when it names a metric that is
// not in the metric contract (internal/contract: the bench's aggregates and
// the inference engines' names included), nor among the recording rules in
// rules/*.yml.

// KnownMetrics returns every metric name the dashboards may query outside
// the recording rules, with the series names of histograms
// (_bucket, _sum, _count) expanded.
func KnownMetrics() map[string]bool {
	known := map[string]bool{}
	for _, m := range contract.Metrics {
		known[m] = true
	}
	// A histogram is queried through its series, never its bare name.
	for _, m := range contract.BenchAggregates {
		delete(known, m.Name)
	}
	add := func(name, typ string) {
		if typ == "histogram" {
			for _, s := range []string{"_bucket", "_sum", "_count"} {
				known[name+s] = true
			}
			return
		}
		known[name] = true
	}
	for _, m := range contract.BenchAggregates {
		add(m.Name, m.Type)
	}
	for _, m := range contract.EngineMetrics {
		add(m.Name, m.Type)
	}
	return known
}
