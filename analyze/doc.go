// Package analyze is the post-processor: it reads a run once (Prometheus
// through the HTTP query API, the bench archive, the carbon intensity) into
// an Input, derives the whole report from it in one pure computation
// (Compute: stage energy, steady-state J/token, full-lifecycle J/token,
// goodput, latency percentiles, docs/design.md "Definitions"), and writes
// the report.
package analyze
