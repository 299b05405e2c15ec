package dashboards

//lint:file-ignore SA1019 dashboard.Dashboard (schema v1) is what Grafana's file provisioning loads in every supported release.

import (
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/table"

	"github.com/joulemark/joulemark/internal/contract"
)

// gpuSel selects the GPUs of the node and gpu template variables.
const gpuSel = `{node=~"$node", gpu=~"$gpu"}`

// Fleet builds the "Fleet energy (live)" dashboard: power and energy of every
// GPU the exporters sample, live J/token of the engines, and sampler health.
func Fleet() (dashboard.Dashboard, error) {
	return dashboard.NewDashboardBuilder("joulemark / Fleet energy (live)").
		Uid("joulemark-fleet").
		Description("Live GPU power and energy across every node running the joulemark exporter, J/token of the inference engines, and sampler health. GPU board energy only (the GPU module incl. its Grace CPU on C2C superchips: energy_scope on joulemark_gpu_info).").
		Tags([]string{"joulemark", "energy", "gpu"}).
		Editable().
		Tooltip(dashboard.DashboardCursorSyncCrosshair).
		Refresh("10s").
		Time("now-1h", "now").
		Timezone(common.TimeZoneUtc).
		WithVariable(datasourceVariable()).
		WithVariable(nodeVariable()).
		WithVariable(gpuVariable()).
		WithVariable(namespaceVariable()).
		WithVariable(podVariable()).
		WithVariable(modelVariable()).
		WithVariable(runVariable(true)).
		Annotations(phaseAnnotations(`=~"$run_id"`)).
		WithRow(dashboard.NewRowBuilder("Power and energy")).
		WithPanel(statPanel(panelSpec{
			title: "Fleet power", unit: unitWatt, w: 6, h: 6, boundary: boundaryGPU,
			desc:    "Sum of the latest power sample of every selected GPU.",
			queries: []query{{expr: `sum(joulemark_gpu_power_watts` + gpuSel + `)`, legend: "power"}},
		}).GraphMode(common.BigValueGraphModeArea)).
		WithPanel(statPanel(panelSpec{
			title: "Energy over the time range", unit: unitJoule, w: 6, h: 6, boundary: boundaryGPU,
			desc:    "GPU energy of the selected GPUs over the dashboard's time range, from the exporter's energy counter (NVML energy counter where supported, else integrated samples).",
			queries: []query{{expr: `sum(increase(joulemark_gpu_energy_joules_total` + gpuSel + `[$__range]))`, legend: "energy", instant: true}},
		})).
		WithPanel(statPanel(panelSpec{
			title: "GPUs sampled", unit: unitCount, w: 6, h: 6, boundary: boundaryGPU,
			desc:    "Number of GPUs the exporters report (joulemark_gpu_info series) among the selection.",
			queries: []query{{expr: `count(joulemark_gpu_info` + gpuSel + `)`, legend: "GPUs"}},
		})).
		WithPanel(statPanel(panelSpec{
			title: "Live J/token (engines)", unit: unitJoulePerToken, w: 6, h: 6, boundary: boundaryGPU,
			desc:    "GPU energy of the selected models' pods (the exporter's per-pod energy, from the kubelet's GPU allocation) divided by the output tokens those pods generated (" + engineNameList(contract.RoleGenerationTokens) + "), 5-minute rates from the recording rules. Only the GPUs a serving pod holds count; idle serving pods count in their model's energy.",
			queries: []query{{expr: `sum(model_name:joulemark_energy_joules:rate5m{model_name=~"$model"}) / sum(model_name:joulemark_generation_tokens:rate5m{model_name=~"$model"})`, legend: "J/token"}},
		})).
		WithPanel(timeSeries(panelSpec{
			title: "Power per GPU", unit: unitWatt, w: 12, boundary: boundaryGPU,
			desc:    "Latest power sample of each GPU at scrape time (instant power where the GPU offers it, else NVML's 1 s average).",
			queries: []query{{expr: `joulemark_gpu_power_watts` + gpuSel, legend: "{{node}} GPU {{gpu}}"}},
		}).Min(0)).
		WithPanel(timeSeries(panelSpec{
			title: "Power per node", unit: unitWatt, w: 12, boundary: boundaryGPU,
			desc:    "Sum of the selected GPUs' power on each node.",
			queries: []query{{expr: `sum by (node) (joulemark_gpu_power_watts` + gpuSel + `)`, legend: "{{node}}"}},
		}).Min(0).Stacking(common.NewStackingConfigBuilder().Mode(common.StackingModeNormal))).
		WithPanel(timeSeries(panelSpec{
			title: "Energy rate per node", unit: unitWatt, w: 12, boundary: boundaryGPU,
			desc:    "Rate of the energy counter per node (J/s = W): the average power between scrapes, which unlike the sampled power misses no spike.",
			queries: []query{{expr: `sum by (node) (rate(joulemark_gpu_energy_joules_total` + gpuSel + `[$__rate_interval]))`, legend: "{{node}}"}},
		}).Min(0)).
		WithRow(dashboard.NewRowBuilder("Pods and models")).
		WithPanel(timeSeries(panelSpec{
			title: "Live J/token per model (engines)", unit: unitJoulePerToken, w: 12, boundary: boundaryGPU,
			desc:    "Energy of each model's pods over the tokens they generated, 5-minute rates (recording rule model_name:joulemark_joules_per_generation_token:ratio_rate5m). Pod energy is integrated by the exporter over exactly the GPUs the kubelet lists for the pod.",
			queries: []query{{expr: `model_name:joulemark_joules_per_generation_token:ratio_rate5m{model_name=~"$model"}`, legend: "{{model_name}}"}},
		}).Min(0)).
		WithPanel(timeSeries(panelSpec{
			title: "Live J/token per pod (engines)", unit: unitJoulePerToken, w: 12, boundary: boundaryGPU,
			desc:    "Each serving pod's energy over its own generated tokens, 5-minute rates (recording rule namespace_pod:joulemark_joules_per_generation_token:ratio_rate5m). A tensor-parallel pod sums every GPU it holds.",
			queries: []query{{expr: `namespace_pod:joulemark_joules_per_generation_token:ratio_rate5m{namespace=~"$namespace", pod=~"$pod"}`, legend: "{{namespace}}/{{pod}}"}},
		}).Min(0)).
		WithPanel(timeSeries(panelSpec{
			title: "Energy rate per namespace", unit: unitWatt, w: 12, boundary: boundaryGPU,
			desc:    "GPU energy attributed to the pods of each namespace per second (recording rule namespace:joulemark_energy_joules:rate5m).",
			queries: []query{{expr: `namespace:joulemark_energy_joules:rate5m{namespace=~"$namespace"}`, legend: "{{namespace}}"}},
		}).Min(0).Stacking(common.NewStackingConfigBuilder().Mode(common.StackingModeNormal))).
		WithPanel(timeSeries(panelSpec{
			title: "Unallocated and idle-allocated energy rate", unit: unitWatt, w: 12, boundary: boundaryGPU,
			desc: "Energy per second of GPUs no pod holds, per node (node:joulemark_unallocated_energy_joules:rate5m), and of serving pods that generated no token in 5 minutes (namespace_pod:joulemark_idle_allocated_energy_joules:rate5m): what the fleet spends without serving.",
			queries: []query{
				{expr: `node:joulemark_unallocated_energy_joules:rate5m{node=~"$node"}`, legend: "unallocated {{node}}"},
				{expr: `namespace_pod:joulemark_idle_allocated_energy_joules:rate5m{namespace=~"$namespace", pod=~"$pod"}`, legend: "idle {{namespace}}/{{pod}}"},
			},
		}).Min(0)).
		WithPanel(timeSeries(panelSpec{
			title: "Engine output tokens per model", unit: unitTokensPerSec, w: 12, boundary: boundaryEngine,
			desc:    "Output tokens the engines of each model generated per second, 5-minute rate (recording rule model_name:joulemark_generation_tokens:rate5m): the denominator of the live J/token.",
			queries: []query{{expr: `model_name:joulemark_generation_tokens:rate5m{model_name=~"$model"}`, legend: "{{model_name}}"}},
		}).Min(0)).
		WithPanel(timeSeries(panelSpec{
			title: "(Re)starts and their energy", unit: unitJoule, w: 12, boundary: boundaryGPU,
			desc:    "Pods whose GPU allocation appeared in the last 10 minutes (a start, a restart, a rolling deploy) and the energy they have drawn since: until their first token, the startup cost. joulemark analyze production reports each start's energy to its first token.",
			queries: []query{{expr: `sum by (namespace, pod) (joulemark_pod_energy_joules_total{namespace=~"$namespace", pod=~"$pod"}) and on (namespace, pod) (group by (namespace, pod) (joulemark_gpu_allocation_info) unless on (namespace, pod) group by (namespace, pod) (joulemark_gpu_allocation_info offset 10m))`, legend: "{{namespace}}/{{pod}}"}},
		}).Min(0)).
		WithRow(dashboard.NewRowBuilder("Cost and emissions (GPU energy × PUE)")).
		WithPanel(timeSeries(panelSpec{
			title: "Energy cost per hour by model and namespace (GPU energy × PUE)", unit: unitMoneyPerHour, w: 12, boundary: boundaryCost,
			desc: "What the selected models' and namespaces' pods cost per hour at the operator's energy price, 5-minute rates (recording rules model_name:joulemark_cost_per_hour:rate5m and namespace:joulemark_cost_per_hour:rate5m): their GPU energy in kWh × PUE × price per kWh.",
			queries: []query{
				{expr: `model_name:joulemark_cost_per_hour:rate5m{model_name=~"$model"}`, legend: "model {{model_name}}"},
				{expr: `namespace:joulemark_cost_per_hour:rate5m{namespace=~"$namespace"}`, legend: "namespace {{namespace}}"},
			},
		}).Min(0)).
		WithPanel(timeSeries(panelSpec{
			title: "Emissions per hour by model and namespace (GPU energy × PUE)", unit: unitGCO2ePerHour, w: 12, boundary: boundaryCost,
			desc: "The grid emissions of the selected models' and namespaces' pods per hour, 5-minute rates (recording rules model_name:joulemark_gco2e_per_hour:rate5m and namespace:joulemark_gco2e_per_hour:rate5m): their GPU energy in kWh × PUE × carbon intensity (gCO2e/kWh, a constant or a live series).",
			queries: []query{
				{expr: `model_name:joulemark_gco2e_per_hour:rate5m{model_name=~"$model"}`, legend: "model {{model_name}}"},
				{expr: `namespace:joulemark_gco2e_per_hour:rate5m{namespace=~"$namespace"}`, legend: "namespace {{namespace}}"},
			},
		}).Min(0)).
		WithRow(dashboard.NewRowBuilder("Limits and thermals")).
		WithPanel(timeSeries(panelSpec{
			title: "Power against the limit", unit: unitRatio, w: 12, boundary: boundaryGPU,
			desc:    "Each GPU's power divided by its enforced power limit; near 100% the GPU is power-capped and clocks drop.",
			queries: []query{{expr: `joulemark_gpu_power_watts` + gpuSel + ` / joulemark_gpu_power_limit_watts` + gpuSel, legend: "{{node}} GPU {{gpu}}"}},
		}).Min(0).Max(1.1).Thresholds(thresholds(0.95)).
			ThresholdsStyle(common.NewGraphThresholdsStyleConfigBuilder().Mode(common.GraphThresholdsStyleModeLine))).
		WithPanel(timeSeries(panelSpec{
			title: "Temperature", unit: unitCelsius, w: 12, boundary: boundaryGPU,
			desc:    "GPU core temperature of each GPU (NVML, sampled at 1 Hz).",
			queries: []query{{expr: `joulemark_gpu_temperature_celsius` + gpuSel, legend: "{{node}} GPU {{gpu}}"}},
		})).
		WithPanel(timeSeries(panelSpec{
			title: "Utilization", unit: unitRatio, w: 8, boundary: boundaryGPU,
			desc:    "NVML GPU utilization: the fraction of time a kernel ran, not how much of the GPU it used.",
			queries: []query{{expr: `joulemark_gpu_utilization_ratio` + gpuSel, legend: "{{node}} GPU {{gpu}}"}},
		}).Min(0).Max(1)).
		WithPanel(timeSeries(panelSpec{
			title: "Memory used", unit: unitBytes, w: 8, boundary: boundaryGPU,
			desc:    "GPU memory in use on each GPU.",
			queries: []query{{expr: `joulemark_gpu_memory_used_bytes` + gpuSel, legend: "{{node}} GPU {{gpu}}"}},
		}).Min(0)).
		WithPanel(timeSeries(panelSpec{
			title: "SM clock", unit: unitHertz, w: 8, boundary: boundaryGPU,
			desc:    "Streaming-multiprocessor clock of each GPU; it falls when the GPU is power- or thermally capped.",
			queries: []query{{expr: `joulemark_gpu_sm_clock_hertz` + gpuSel, legend: "{{node}} GPU {{gpu}}"}},
		}).Min(0)).
		WithRow(dashboard.NewRowBuilder("Sampler health")).
		WithPanel(timeSeries(panelSpec{
			title: "Samples per second", unit: unitPerSecond, w: 8, boundary: boundarySampler,
			desc:    "Power samples taken per second on each GPU; 10/s at the default 100 ms interval.",
			queries: []query{{expr: `rate(joulemark_sampler_samples_total` + gpuSel + `[$__rate_interval])`, legend: "{{node}} GPU {{gpu}}"}},
		}).Min(0)).
		WithPanel(timeSeries(panelSpec{
			title: "Sampler errors and overruns", unit: unitPerSecond, w: 8, boundary: boundarySampler,
			desc: "NVML errors (selected GPUs) and sampling ticks that overran their interval (the whole exporter), per second, per node. Anything above zero means energy was integrated from fewer samples than asked.",
			queries: []query{
				{expr: `sum by (node) (rate(joulemark_sampler_errors_total` + gpuSel + `[$__rate_interval]))`, legend: "{{node}} errors"},
				{expr: `sum by (node) (rate(joulemark_sampler_overruns_total{node=~"$node"}[$__rate_interval]))`, legend: "{{node}} overruns"},
			},
		}).Min(0)).
		WithPanel(apply(table.NewPanelBuilder(), panelSpec{
			title: "What is measured", unit: unitNone, w: 8, boundary: boundaryGPU,
			desc:    "One row per GPU: model, driver, where power comes from (power_source) and whether energy is NVML's counter or integrated from samples (energy_source).",
			queries: []query{{expr: `joulemark_gpu_info` + gpuSel, instant: true, table: true}},
		}).WithTransformation(dashboard.DataTransformerConfig{
			Id: "organize",
			Options: map[string]any{
				"excludeByName": map[string]any{"Time": true, "Value": true, "__name__": true},
			},
		})).
		Build()
}
