// Package dashboards builds joulemark's Grafana dashboards in Go with the
// Grafana Foundation SDK and renders them to JSON for provisioning:
//
//   - Fleet energy (live): power and energy of every GPU, live J/token of the
//     engines, limits, thermals, sampler health.
//   - Benchmark run: one run's lifecycle phases, stage energy, J/token,
//     latency from the per-request samples, load, engine queue and KV cache.
//   - Sweep comparison: one point per run, J/token against load, throughput
//     against TTFT p95, goodput.
//
// Every query names only metrics of the metric contract, the benchmark
// aggregates (contract.BenchAggregates), the inference engines' (vLLM's
// and SGLang's) metrics of internal/contract or the recording rules in rules/. The generated JSON in this
// directory is committed; `go generate ./dashboards` (or `joulemark
// dashboards generate --out dashboards/`) rewrites it, and a test fails when
// it drifts from the code.
package dashboards
