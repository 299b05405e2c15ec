package dashboards

//lint:file-ignore SA1019 dashboard.Dashboard (schema v1) is what Grafana's file provisioning loads in every supported release.

import (
	"github.com/grafana/grafana-foundation-sdk/go/barchart"
	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/table"
	"github.com/grafana/grafana-foundation-sdk/go/xychart"
)

// sweepRuns matches the runs selected in the run_id variable.
const sweepRuns = `=~"$run_id"`

// sweepPoint is one per-run figure of the sweep comparison: an instant query
// over the dashboard's time range, one row per run_id.
type sweepPoint struct {
	name, unit, expr string
}

// sweepPoints are the per-run figures, in table column order. Their RefIds
// (A, B, ...) follow this order.
var sweepPoints = []sweepPoint{
	{"Peak in-flight", unitCount, `sum by (run_id) (max_over_time(joulemark_bench_requests_in_flight{run_id` + sweepRuns + `}[$__range]))`},
	{"Target rate", unitReqPerSec, `sum by (run_id) (max_over_time(joulemark_bench_target_rate_requests_per_second{run_id` + sweepRuns + `}[$__range]))`},
	{"Formal J/token", unitJoulePerToken, formalJoulesPerToken("run_id", sweepRuns)},
	{"Full-lifecycle J/token", unitJoulePerToken, lifecycleJoulesPerToken("run_id", sweepRuns)},
	{"Throughput", unitTokensPerSec, `sum by (run_id) (sum_over_time(joulemark_request_output_tokens{run_id` + sweepRuns + `, phase="formal"}[$__range])) / max by (run_id) (last_over_time(joulemark_phase_end_timestamp_seconds{run_id` + sweepRuns + `, phase="formal"}[$__range]) - last_over_time(joulemark_phase_start_timestamp_seconds{run_id` + sweepRuns + `, phase="formal"}[$__range]))`},
	{"TTFT p95", unitSeconds, `histogram_quantile(0.95, sum by (run_id, le) (max_over_time(joulemark_bench_ttft_seconds_bucket{run_id` + sweepRuns + `, phase="formal"}[$__range])))`},
	{"TPOT p95", unitSeconds, `histogram_quantile(0.95, sum by (run_id, le) (max_over_time(joulemark_bench_tpot_seconds_bucket{run_id` + sweepRuns + `, phase="formal"}[$__range])))`},
	{"Error ratio", unitRatio, `1 - sum by (run_id) (sum_over_time(joulemark_request_success{run_id` + sweepRuns + `, phase="formal"}[$__range])) / sum by (run_id) (count_over_time(joulemark_request_success{run_id` + sweepRuns + `, phase="formal"}[$__range]))`},
	{"Goodput", unitRatio, sweepGoodput},
}

// sweepGoodput estimates, per run, the share of formal requests that
// succeeded with TTFT and TPOT within the SLOs from the bench histograms:
// (successful requests with TTFT <= SLO / all requests) x (share of TPOT
// observations <= SLO). Exact only when the SLOs are bucket boundaries and
// the two conditions are independent; the report's goodput is exact.
const sweepGoodput = `sum by (run_id) (max_over_time(joulemark_bench_ttft_seconds_bucket{run_id` + sweepRuns + `, phase="formal", le="$slo_ttft"}[$__range])) / sum by (run_id) (max_over_time(joulemark_bench_latency_seconds_count{run_id` + sweepRuns + `, phase="formal"}[$__range])) * sum by (run_id) (max_over_time(joulemark_bench_tpot_seconds_bucket{run_id` + sweepRuns + `, phase="formal", le="$slo_tpot"}[$__range])) / sum by (run_id) (max_over_time(joulemark_bench_tpot_seconds_count{run_id` + sweepRuns + `, phase="formal"}[$__range]))`

// Sweep builds the "Sweep comparison" dashboard: one point per run of a
// concurrency or rate sweep.
func Sweep() (dashboard.Dashboard, error) {
	return dashboard.NewDashboardBuilder("joulemark / Sweep comparison").
		Uid("joulemark-sweep").
		Description("Runs of a concurrency or rate sweep side by side: J/token against load, throughput against TTFT p95, goodput per point. Pick the runs in the Run variable and a time range covering them. GPU board energy only (the GPU module incl. its Grace CPU on C2C superchips: energy_scope on joulemark_gpu_info); steady-state J/token is in the reports of `joulemark analyze`.").
		Tags([]string{"joulemark", "energy", "sweep"}).
		Editable().
		Time("now-24h", "now").
		Timezone(common.TimeZoneUtc).
		WithVariable(datasourceVariable()).
		WithVariable(nodeVariable()).
		WithVariable(gpuVariable()).
		WithVariable(runVariable(true)).
		WithVariable(sloVariable("slo_ttft", "TTFT SLO (s)", "0.5", "Goodput's time-to-first-token objective in seconds; must be a bucket boundary of joulemark_bench_ttft_seconds (le label as written, e.g. 0.25, 0.5, 1).")).
		WithVariable(sloVariable("slo_tpot", "TPOT SLO (s)", "0.05", "Goodput's time-per-output-token objective in seconds; must be a bucket boundary of joulemark_bench_tpot_seconds (le label as written, e.g. 0.03, 0.05, 0.075); the default is analyze's.")).
		Annotations(phaseAnnotations(sweepRuns)).
		WithRow(dashboard.NewRowBuilder("Points")).
		WithPanel(sweepTable()).
		WithRow(dashboard.NewRowBuilder("Trade-offs")).
		WithPanel(sweepXY("J/token against concurrency", "Formal-stage J/token of each run against its peak in-flight requests (closed-loop concurrency).", 0, 2, unitJoulePerToken)).
		WithPanel(sweepXY("J/token against rate", "Formal-stage J/token of each run against its target request rate (open-loop sweeps).", 1, 2, unitJoulePerToken)).
		WithPanel(sweepXY("Throughput against TTFT p95", "Formal output tokens per second of each run against its p95 time to first token.", 5, 4, unitTokensPerSec)).
		WithPanel(withViz(apply(barchart.NewPanelBuilder(), panelSpec{
			title: "Goodput per point", unit: unitRatio, w: 12, h: 9, boundary: boundaryClient,
			desc:    "Per run: " + sweepGoodputHelp,
			queries: []query{{expr: sweepGoodput, instant: true, table: true}},
		})).XField("run_id").Min(0).Max(1).
			WithTransformation(dashboard.DataTransformerConfig{Id: "organize", Options: map[string]any{
				"excludeByName": map[string]any{"Time": true},
				"renameByName":  map[string]any{"Value": "Goodput"},
			}})).
		Build()
}

const sweepGoodputHelp = "the share of formal requests that succeeded with TTFT within $slo_ttft s, times the share of TPOT observations within $slo_tpot s, from the bench job's histograms (exact only when both SLOs are bucket boundaries and the two conditions are independent; the report's goodput counts each request)."

// sweepTable is one row per run with every sweep figure.
func sweepTable() *table.PanelBuilder {
	qs := make([]query, len(sweepPoints))
	rename := map[string]any{"run_id": "Run"}
	index := map[string]any{"run_id": 0}
	for i, p := range sweepPoints {
		qs[i] = query{expr: p.expr, instant: true, table: true}
		col := "Value #" + string(rune('A'+i))
		rename[col] = p.name
		index[col] = i + 1
	}
	b := apply(table.NewPanelBuilder(), panelSpec{
		title: "Runs", unit: unitNone, w: 24, h: 9, boundary: boundaryGPU + " Latency, rates and goodput are measured at the benchmark client.",
		desc:    "One row per selected run. Formal J/token = formal-phase energy / formal output tokens; full-lifecycle J/token = (startup + warm-up + formal + release energy) / formal output tokens; throughput = formal output tokens / formal duration; TTFT and TPOT p95 from the bench histograms; goodput: " + sweepGoodputHelp,
		queries: qs,
	}).
		WithTransformation(dashboard.DataTransformerConfig{Id: "merge", Options: map[string]any{}}).
		WithTransformation(dashboard.DataTransformerConfig{Id: "organize", Options: map[string]any{
			"excludeByName": map[string]any{"Time": true},
			"indexByName":   index,
			"renameByName":  rename,
		}})
	for _, p := range sweepPoints {
		b = b.OverrideByName(p.name, []dashboard.DynamicConfigValue{{Id: "unit", Value: p.unit}})
	}
	return b
}

// sweepXY plots sweep point y against sweep point x, one dot per run.
func sweepXY(title, desc string, x, y int, unit string) *xychart.PanelBuilder {
	xp, yp := sweepPoints[x], sweepPoints[y]
	matcher := func(name string) *xychart.MatcherConfigBuilder {
		return xychart.NewMatcherConfigBuilder().Id("byName").Options(name)
	}
	boundary := boundaryGPU
	if unit != unitJoulePerToken {
		boundary = boundaryClient
	}
	return withViz(apply(xychart.NewPanelBuilder(), panelSpec{
		title: title, unit: unit, w: 12, h: 9, boundary: boundary,
		desc:    desc + " One point per selected run.",
		queries: []query{{expr: xp.expr, instant: true, table: true}, {expr: yp.expr, instant: true, table: true}},
	})).
		WithTransformation(dashboard.DataTransformerConfig{Id: "merge", Options: map[string]any{}}).
		WithTransformation(dashboard.DataTransformerConfig{Id: "organize", Options: map[string]any{
			"excludeByName": map[string]any{"Time": true},
			"renameByName":  map[string]any{"Value #A": xp.name, "Value #B": yp.name},
		}}).
		Mapping(xychart.SeriesMappingManual).
		Series([]cog.Builder[xychart.XYSeriesConfig]{
			xychart.NewXYSeriesConfigBuilder().
				Name(xychart.NewXychartXYSeriesConfigNameBuilder().Fixed(yp.name)).
				// After the merge transformation there is one frame.
				Frame(xychart.NewXychartXYSeriesConfigFrameBuilder().Matcher(xychart.NewMatcherConfigBuilder().Id("byIndex").Options(0))).
				X(xychart.NewXychartXYSeriesConfigXBuilder().Matcher(matcher(xp.name))).
				Y(xychart.NewXychartXYSeriesConfigYBuilder().Matcher(matcher(yp.name))),
		}).
		Show(xychart.XYShowModePoints).
		OverrideByName(xp.name, []dashboard.DynamicConfigValue{{Id: "unit", Value: xp.unit}})
}
