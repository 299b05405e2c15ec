// Package contract spells joulemark's public names once: the metric and
// label names of the metric contract, the lifecycle phases, and the report
// and bench flag codes. Tests compare them with docs/design.md,
// docs/analyze.md and docs/bench.md. Every writer (exporter, benchjob) and
// reader (analyze, dashboards, production) uses these names; a name changes
// here, on purpose, with docs, rules and dashboards.
package contract
