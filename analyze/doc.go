// Package analyze is the post-processor: it reads a run from Prometheus
// through the HTTP query API and derives stage energy, steady-state J/token,
// full-lifecycle J/token, goodput and latency percentiles (docs/design.md,
// "Definitions"), and writes the report.
package analyze
