package dashboards

//lint:file-ignore SA1019 dashboard.Dashboard (schema v1) is what Grafana's file provisioning loads in every supported release.

import (
	"strings"

	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/statetimeline"
	"github.com/grafana/grafana-foundation-sdk/go/table"
	"github.com/grafana/grafana-foundation-sdk/go/timeseries"
	"github.com/joulemark/joulemark/internal/contract"
)

// Selectors of the benchmark dashboard.
const (
	runSel     = `{run_id="$run_id"}`
	runGPUSel  = `{run_id="$run_id", node=~"$node", gpu=~"$gpu"}`
	engineSel  = `{node=~"$node"}`
	liveWindow = "1m"
)

// Benchmark builds the "Benchmark run" dashboard: one run's lifecycle phases,
// stage energy, latency, load and the engine's own view.
func Benchmark() (dashboard.Dashboard, error) {
	return dashboard.NewDashboardBuilder("joulemark / Benchmark run").
		Uid("joulemark-benchmark").
		Description("One joulemark bench run through idle, startup, warm-up, formal and release: stage energy, J/token, latency from the per-request samples, load and engine state. GPU board energy only (the GPU module incl. its Grace CPU on C2C superchips: energy_scope on joulemark_gpu_info). The report of `joulemark analyze` carries the steady-state J/token; this dashboard shows stage figures and live windows.").
		Tags([]string{"joulemark", "energy", "benchmark"}).
		Editable().
		Tooltip(dashboard.DashboardCursorSyncCrosshair).
		Refresh("10s").
		Time("now-30m", "now").
		Timezone(common.TimeZoneUtc).
		WithVariable(datasourceVariable()).
		WithVariable(nodeVariable()).
		WithVariable(gpuVariable()).
		WithVariable(runVariable(false)).
		Annotations(phaseAnnotations(`="$run_id"`)).
		WithRow(dashboard.NewRowBuilder("Lifecycle and stage energy")).
		WithPanel(statPanel(panelSpec{
			title: "Formal-stage J/token", unit: unitJoulePerToken, w: 6, h: 4, boundary: boundaryGPU,
			desc:    "Energy of the formal phase (exporter, all GPUs of the run) divided by the output tokens of the formal requests. Not the steady-state J/token, which `joulemark analyze` computes.",
			queries: []query{{expr: formalJoulesPerToken("run_id", `="$run_id"`), instant: true}},
		})).
		WithPanel(statPanel(panelSpec{
			title: "Full-lifecycle J/token", unit: unitJoulePerToken, w: 6, h: 4, boundary: boundaryGPU,
			desc:    "(startup + warm-up + formal + release energy) / formal output tokens, as docs/design.md defines it; never mixed with steady-state J/token.",
			queries: []query{{expr: lifecycleJoulesPerToken("run_id", `="$run_id"`), instant: true}},
		})).
		WithPanel(statPanel(panelSpec{
			title: "Release closed", unit: unitNone, w: 6, h: 4, boundary: boundaryGPU,
			desc:    "Whether every GPU came back within the tolerance of its idle baseline and held there (1), or the wait timed out (0): a run whose release did not close is excluded from formal results.",
			queries: []query{{expr: `min(last_over_time(joulemark_run_release_closed` + runSel + `[$__range]))`, instant: true}},
		}).Mappings([]dashboard.ValueMapping{{ValueMap: &dashboard.ValueMap{
			Type: dashboard.MappingTypeValueToText,
			Options: map[string]dashboard.ValueMappingResult{
				"0": {Text: new("not closed"), Color: new("red")},
				"1": {Text: new("closed"), Color: new("green")},
			},
		}}})).
		WithPanel(statPanel(panelSpec{
			title: "Idle baseline power", unit: unitWatt, w: 6, h: 4, boundary: boundaryGPU,
			desc:    "Mean power of the idle phase summed over the run's GPUs. Never subtracted from any figure.",
			queries: []query{{expr: `sum(last_over_time(joulemark_run_baseline_power_watts` + runSel + `[$__range]))`, instant: true}},
		})).
		WithPanel(stageEnergyTable()).
		WithPanel(withViz(apply(statetimeline.NewPanelBuilder(), panelSpec{
			title: "Phases", unit: unitNone, w: 12, h: 9, boundary: boundaryGPU,
			desc:    "Which lifecycle phase was active (joulemark_phase_active), as the exporter marked it.",
			queries: []query{{expr: `max by (phase) (joulemark_phase_active` + runSel + `)`, legend: "{{phase}}"}},
		})).Mappings([]dashboard.ValueMapping{{ValueMap: &dashboard.ValueMap{
			Type: dashboard.MappingTypeValueToText,
			Options: map[string]dashboard.ValueMappingResult{
				"0": {Text: new(" "), Color: new("transparent")},
				"1": {Text: new("active"), Color: new("blue")},
			},
		}}}).ShowValue(common.VisibilityModeNever)).
		WithPanel(timeSeries(panelSpec{
			title: "Power per GPU", unit: unitWatt, w: 12, h: 9, boundary: boundaryGPU,
			desc:    "Latest power sample of each selected GPU; the phase annotations mark the lifecycle.",
			queries: []query{{expr: `joulemark_gpu_power_watts` + gpuSel, legend: "{{node}} GPU {{gpu}}"}},
		}).Min(0)).
		WithPanel(timeSeries(panelSpec{
			title: "Live J/token", unit: unitJoulePerToken, w: 12, h: 9, boundary: boundaryGPU,
			desc:    "GPU energy of the exporters running this run's formal phase over the output tokens of its successful formal requests, 1-minute rates (recording rule run:joulemark_joules_per_token:ratio_rate1m). A live view: the report's steady-state and full-lifecycle J/token come from `joulemark analyze`.",
			queries: []query{{expr: `run:joulemark_joules_per_token:ratio_rate1m` + runSel, legend: "J/token"}},
		}).Min(0)).
		WithPanel(timeSeries(panelSpec{
			title: "Host power (RAPL)", unit: unitWatt, w: 12, h: 9, boundary: boundaryHost,
			desc: "CPU package and DRAM power of each node from the exporter's RAPL powercap zones (joulemark_host_energy_joules_total, package-* and dram zones; core/uncore lie inside the package, psys overlaps it). Beside the GPUs, never added into their figures. No line: the host energy is unavailable, see joulemark_host_energy_unavailable{reason}.",
			queries: []query{
				{expr: `sum by (node) (rate(joulemark_host_energy_joules_total{node=~"$node",domain=~"package.*|dram"}[$__rate_interval]))`, legend: "{{node}} host"},
				{expr: `max by (node, reason) (joulemark_host_energy_unavailable{node=~"$node"})`, legend: "{{node}} unavailable: {{reason}}"},
			},
		}).Min(0)).
		WithPanel(statPanel(panelSpec{
			title: "Formal-stage host energy", unit: unitJoule, w: 12, h: 9, boundary: boundaryHost,
			desc:    "Host energy (RAPL package-* and dram zones, all nodes of the run) over the formal phase, read by the exporter at the phase boundaries. `joulemark analyze` puts GPU+host J/token beside the GPU figures.",
			queries: []query{{expr: `sum(last_over_time(joulemark_phase_host_energy_joules{run_id="$run_id",phase="formal",domain=~"package.*|dram"}[$__range]))`, instant: true}},
		})).
		WithRow(dashboard.NewRowBuilder("Latency (per-request samples)")).
		WithPanel(latencyPanel("Time to first token", "TTFT: send to first token of each request.",
			contract.BenchTTFT+"_bucket", requestTTFT)).
		WithPanel(latencyPanel("Time per output token", "TPOT: (latency - TTFT) / (output tokens - 1) of each successful request with more than one output token.",
			contract.BenchTPOT+"_bucket", requestTPOT)).
		WithPanel(latencyPanel("End-to-end latency", "Latency: send to last byte of each request, failed requests included (to their failure).",
			contract.BenchLatency+"_bucket", requestLatency)).
		WithRow(dashboard.NewRowBuilder("Load")).
		WithPanel(timeSeries(panelSpec{
			title: "Target vs achieved rate", unit: unitReqPerSec, w: 8, boundary: boundaryClient,
			desc: "Requests per second the load shape asked for and the rate the client actually sent, summed over bench pods. Achieved below target means the client could not keep up and the run is flagged.",
			queries: []query{
				{expr: `sum(joulemark_bench_target_rate_requests_per_second` + runSel + `)`, legend: "target"},
				{expr: `sum(joulemark_bench_achieved_rate_requests_per_second` + runSel + `)`, legend: "achieved"},
			},
		}).Min(0)).
		WithPanel(timeSeries(panelSpec{
			title: "In-flight requests", unit: unitCount, w: 8, boundary: boundaryClient,
			desc:    "Requests sent and not yet finished, summed over bench pods (the closed-loop concurrency, or what an open-loop arrival process built up).",
			queries: []query{{expr: `sum(joulemark_bench_requests_in_flight` + runSel + `)`, legend: "in flight"}},
		}).Min(0)).
		WithPanel(timeSeries(panelSpec{
			title: "Requests by outcome", unit: unitReqPerSec, w: 8, boundary: boundaryClient,
			desc:    "Finished requests per second by outcome (success or the error class).",
			queries: []query{{expr: `sum by (outcome) (rate(joulemark_bench_requests_total` + runSel + `[$__rate_interval]))`, legend: "{{outcome}}"}},
		}).Min(0).Stacking(common.NewStackingConfigBuilder().Mode(common.StackingModeNormal))).
		WithPanel(timeSeries(panelSpec{
			title: "Error ratio", unit: unitRatio, w: 8, boundary: boundaryClient,
			desc:    "Share of the requests that ended in a sliding 1-minute window and failed, from the per-request success samples.",
			queries: []query{{expr: `1 - sum(sum_over_time(joulemark_request_success` + runSel + `[` + liveWindow + `])) / sum(count_over_time(joulemark_request_success` + runSel + `[` + liveWindow + `]))`, legend: "error ratio"}},
		}).Min(0).Max(1)).
		WithPanel(timeSeries(panelSpec{
			title: "Goodput", unit: unitRatio, w: 8, boundary: boundaryClient,
			desc: "Formal requests meeting the SLOs, 1-minute rates from the recording rules (TTFT <= 500 ms and TPOT <= 50 ms, bucket edges of the bench histograms; failures in the denominator): TTFT and TPOT attainment and their minimum, an upper bound of goodput. The per-request line counts the last request of each in-flight slot per step that succeeded with TTFT <= $slo_ttft s and TPOT <= $slo_tpot s. Exact goodput is in the report of `joulemark analyze`.",
			queries: []query{
				{expr: `run:joulemark_bench_goodput_upper_bound:ratio_rate1m` + runSel, legend: "goodput upper bound"},
				{expr: `run:joulemark_bench_ttft_slo_met:ratio_rate1m` + runSel, legend: "TTFT SLO met"},
				{expr: `run:joulemark_bench_tpot_slo_met:ratio_rate1m` + runSel, legend: "TPOT SLO met"},
				{expr: liveGoodput, legend: "per-request goodput"},
			},
		}).Min(0).Max(1)).
		WithPanel(timeSeries(panelSpec{
			title: "Output token throughput", unit: unitTokensPerSec, w: 8, boundary: boundaryClient,
			desc:    "API-reported output tokens of successful requests per second, by phase (the bench job's token counter).",
			queries: []query{{expr: `sum by (phase) (rate(joulemark_bench_output_tokens_total` + runSel + `[$__rate_interval]))`, legend: "{{phase}}"}},
		}).Min(0)).
		WithRow(dashboard.NewRowBuilder("Engine (vLLM or SGLang metrics)")).
		WithPanel(timeSeries(panelSpec{
			title: "Engine queue", unit: unitCount, w: 8, boundary: boundaryEngine,
			desc: "Requests the engine is running (in the batch) and waiting (queued), per model, on the selected nodes: vLLM's or SGLang's (" +
				engineNameList(contract.RoleRunning) + "; " + engineNameList(contract.RoleWaiting) + ").",
			queries: []query{
				{expr: `sum by (model_name) (` + engineGauge(contract.RoleRunning) + `)`, legend: "{{model_name}} running"},
				{expr: `sum by (model_name) (` + engineGauge(contract.RoleWaiting) + `)`, legend: "{{model_name}} waiting"},
			},
		}).Min(0)).
		WithPanel(timeSeries(panelSpec{
			title: "KV-cache usage", unit: unitRatio, w: 8, boundary: boundaryEngine,
			desc: "Fraction of the engine's KV cache in use, the first found of " + engineNameList(contract.RoleKVCache) +
				" (vLLM V1's name, vLLM's before V1, SGLang's). Near 1 the engine preempts (SGLang: retracts) requests.",
			queries: []query{{expr: `max by (model_name) (` + engineGauge(contract.RoleKVCache) + `)`, legend: "{{model_name}}"}},
		}).Min(0).Max(1)).
		WithPanel(timeSeries(panelSpec{
			title: "Engine tokens and preemptions", unit: unitPerSecond, w: 8, boundary: boundaryEngine,
			desc: "Generation and prompt tokens the engine processed per second, and preemptions (SGLang: retractions) per second, per model: vLLM's or SGLang's (" +
				engineNameList(contract.RoleGenerationTokens) + "; " + engineNameList(contract.RolePromptTokens) + "; " + engineNameList(contract.RolePreemptions) + ").",
			queries: []query{
				{expr: `sum by (model_name) (` + engineRate(contract.RoleGenerationTokens) + `)`, legend: "{{model_name}} generation tokens/s"},
				{expr: `sum by (model_name) (` + engineRate(contract.RolePromptTokens) + `)`, legend: "{{model_name}} prompt tokens/s"},
				{expr: `sum by (model_name) (` + engineRate(contract.RolePreemptions) + `)`, legend: "{{model_name}} preemptions/s"},
			},
		}).Min(0)).
		WithVariable(sloVariable("slo_ttft", "TTFT SLO (s)", "0.5", "Goodput's time-to-first-token objective in seconds.")).
		WithVariable(sloVariable("slo_tpot", "TPOT SLO (s)", "0.05", "Goodput's time-per-output-token objective in seconds.")).
		Build()
}

// stageEnergyTable is one row per lifecycle phase: energy, duration, mean power.
func stageEnergyTable() *table.PanelBuilder {
	energy := `sum by (phase) (last_over_time(joulemark_phase_energy_joules` + runGPUSel + `[$__range]))`
	duration := `max by (phase) (last_over_time(joulemark_phase_end_timestamp_seconds` + runSel + `[$__range]) - last_over_time(joulemark_phase_start_timestamp_seconds` + runSel + `[$__range]))`
	return apply(table.NewPanelBuilder(), panelSpec{
		title: "Stage energy", unit: unitJoule, w: 12, h: 9, boundary: boundaryGPU,
		desc: "Energy of each lifecycle phase integrated at the exporter from the high-rate samples over the exact phase boundaries, summed over the selected GPUs; its duration and mean power. Startup energy in the report is startup + warm-up. The idle baseline is never subtracted.",
		queries: []query{
			{expr: energy, instant: true, table: true},
			{expr: duration, instant: true, table: true},
			{expr: energy + " / " + duration, instant: true, table: true},
		},
	}).
		WithTransformation(dashboard.DataTransformerConfig{Id: "merge", Options: map[string]any{}}).
		WithTransformation(dashboard.DataTransformerConfig{Id: "organize", Options: map[string]any{
			"excludeByName": map[string]any{"Time": true},
			"indexByName":   map[string]any{"phase": 0, "Value #A": 1, "Value #B": 2, "Value #C": 3},
			"renameByName":  map[string]any{"phase": "Phase", "Value #A": "Energy", "Value #B": "Duration", "Value #C": "Mean power"},
		}}).
		OverrideByName("Duration", []dashboard.DynamicConfigValue{{Id: "unit", Value: unitSeconds}}).
		OverrideByName("Mean power", []dashboard.DynamicConfigValue{{Id: "unit", Value: unitWatt}}).
		Footer(common.NewTableFooterOptionsBuilder().Show(true).Reducer([]string{"sum"}).Fields([]string{"Energy"}))
}

// latencyPanel shows p50/p95/p99 from the bench histogram and each request
// from the per-request samples as points.
func latencyPanel(title, what, bucket, perRequest string) *timeseries.PanelBuilder {
	q := func(p string) string {
		return `histogram_quantile(` + p + `, sum by (le) (rate(` + bucket + runSel + `[$__rate_interval])))`
	}
	return timeSeries(panelSpec{
		title: title, unit: unitSeconds, w: 8, h: 9, boundary: boundaryClient,
		desc: what + " Lines: p50/p95/p99 from the bench job's histogram; points: the individual requests (per-request samples, one series per in-flight slot).",
		queries: []query{
			{expr: q("0.5"), legend: "p50"},
			{expr: q("0.95"), legend: "p95"},
			{expr: q("0.99"), legend: "p99"},
			{expr: perRequest, legend: "{{phase}} slot {{slot}}"},
		},
	}).Min(0).
		OverrideByQuery("D", []dashboard.DynamicConfigValue{
			{Id: "custom.drawStyle", Value: "points"},
			{Id: "custom.pointSize", Value: 3},
			{Id: "custom.hideFrom", Value: map[string]any{"legend": true, "tooltip": false, "viz": false}},
			{Id: "color", Value: map[string]any{"mode": "fixed", "fixedColor": "rgba(128, 128, 128, 0.6)"}},
		})
}

// lastPerSlot is the last sample of metric in each slot in the step window.
func lastPerSlot(metric string) string {
	return `max by (phase, slot) (last_over_time(` + metric + runSel + `[$__interval]))`
}

var (
	requestTTFT    = lastPerSlot(contract.RequestTTFT)
	requestLatency = lastPerSlot(contract.RequestLatency)
	// requestTPOT follows docs/design.md: (latency - TTFT) / (output tokens - 1),
	// for successful requests with more than one output token.
	// It is parenthesised whole: "and" binds looser than a comparison after it.
	requestTPOT = `((` + requestLatency + ` - ` + requestTTFT + `) / (` + lastPerSlot(contract.RequestOutputTokens) + ` - 1 > 0) and on (phase, slot) (` + lastPerSlot(contract.RequestSuccess) + ` == 1))`
	// liveGoodput: good requests (success, TTFT and TPOT within the SLOs)
	// over all requests, among the last request of each slot per step.
	liveGoodput = `count((` + requestTTFT + ` <= $slo_ttft) and on (phase, slot) (` + requestTPOT + ` <= $slo_tpot)) / count(` + lastPerSlot(contract.RequestSuccess) + `)`
)

// formalJoulesPerToken is formal-phase energy over formal output tokens,
// grouped by the given label (run_id) for the runs the matcher selects.
func formalJoulesPerToken(by, runMatch string) string {
	return `sum by (` + by + `) (last_over_time(joulemark_phase_energy_joules{run_id` + runMatch + `, phase="formal"}[$__range])) / sum by (` + by + `) (sum_over_time(joulemark_request_output_tokens{run_id` + runMatch + `, phase="formal"}[$__range]))`
}

// lifecycleJoulesPerToken is (startup + warm-up + formal + release energy)
// over formal output tokens.
func lifecycleJoulesPerToken(by, runMatch string) string {
	return `sum by (` + by + `) (last_over_time(joulemark_phase_energy_joules{run_id` + runMatch + `, phase=~"startup|warmup|formal|release"}[$__range])) / sum by (` + by + `) (sum_over_time(joulemark_request_output_tokens{run_id` + runMatch + `, phase="formal"}[$__range]))`
}

// sloVariable is a text box holding one SLO threshold in seconds.
func sloVariable(name, label, def, help string) *dashboard.TextBoxVariableBuilder {
	v := dashboard.StringOrArrayOfString{String: new(def)}
	return dashboard.NewTextBoxVariableBuilder(name).
		Label(label).
		Description(help).
		DefaultValue(dashboard.StringOrMap{String: new(def)}).
		Current(dashboard.VariableOption{Text: v, Value: v})
}

// engineAny joins each engine's name of a role, through f, with "or": the
// series of whichever engine serves, the preferred name first
// (internal/contract).
func engineAny(role contract.EngineRole, f func(name string) string) string {
	var parts []string
	for _, n := range contract.EngineNames(role) {
		parts = append(parts, f(n))
	}
	return strings.Join(parts, " or ")
}

// engineGauge selects a role's gauges on the selected nodes.
func engineGauge(role contract.EngineRole) string {
	return engineAny(role, func(n string) string { return n + engineSel })
}

// engineRate is the per-second rate of a role's counters on the selected nodes.
func engineRate(role contract.EngineRole) string {
	return engineAny(role, func(n string) string { return "rate(" + n + engineSel + "[$__rate_interval])" })
}

// engineNameList lists a role's names for a panel description.
func engineNameList(role contract.EngineRole) string {
	return strings.Join(contract.EngineNames(role), ", ")
}
