// Package contract spells joulemark's public names once: the metric and
// label names of the metric contract, the lifecycle phases, and the lists a
// test compares with docs/design.md both ways. Every writer (exporter,
// benchjob) and reader (analyze, dashboards, production) uses these names;
// a name changes here, on purpose, with docs, rules and dashboards.
package contract
