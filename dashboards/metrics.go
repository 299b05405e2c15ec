package dashboards

import "github.com/joulemark/joulemark/internal/contract"

// The metric names the dashboards may query. A test parses every PromQL
// expression of every dashboard and fails when it names a metric that is in
// none of these lists, nor in the metric contract (internal/contract, the
// inference engines' names included), nor among the recording rules in
// rules/*.yml.

// BenchMetric is one benchmark-job aggregate the dashboards read.
type BenchMetric struct {
	Name   string
	Type   string // "counter", "gauge" or "histogram"
	Labels []string
	Help   string
}

// BenchAggregateMetrics are the aggregates the benchmark job writes beside
// the per-request samples (docs/design.md: "requests by outcome, TTFT/TPOT/latency
// histograms, in-flight gauge, target and achieved rate"). The contract names
// them only by what they mean; this one list holds the names the dashboards
// query, named by the contract (internal/contract). Histograms are queried through their
// _bucket and _count series; their phase label is warmup or formal.
var BenchAggregateMetrics = []BenchMetric{
	{contract.BenchRequests, "counter", []string{"run_id", "outcome"}, "requests finished, by outcome (success or the error class)"},
	{contract.BenchOutputTokens, "counter", []string{"run_id", "phase"}, "output tokens of successful requests"},
	{contract.BenchTTFT, "histogram", []string{"run_id", "phase"}, "time to first token of successful requests"},
	{contract.BenchTPOT, "histogram", []string{"run_id", "phase"}, "time per output token after the first, of successful requests"},
	{contract.BenchLatency, "histogram", []string{"run_id", "phase"}, "end-to-end latency of every request, failures included"},
	{contract.BenchInFlight, "gauge", []string{"run_id"}, "requests sent and not yet finished"},
	{contract.BenchTargetRate, "gauge", []string{"run_id"}, "request rate the open loop aims at (0 for a closed loop)"},
	{contract.BenchAchievedRate, "gauge", []string{"run_id"}, "requests sent per second since the formal phase started"},
}
