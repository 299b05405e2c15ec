package dashboards

//lint:file-ignore SA1019 dashboard.Dashboard (schema v1) is what Grafana's file provisioning loads in every supported release; the v2 schema needs Grafana 12 feature toggles.

import (
	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/cog/variants"
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/prometheus"
	"github.com/grafana/grafana-foundation-sdk/go/stat"
	"github.com/grafana/grafana-foundation-sdk/go/timeseries"
	"github.com/joulemark/joulemark/internal/contract"
)

// Measurement boundaries, appended to every panel description.
const (
	boundaryGPU     = "Boundary: GPU board energy only, as NVML reports it (or the simulated GPU); on C2C superchips (GH200, GB200) the GPU module with its Grace CPU and memory, as joulemark_gpu_info's energy_scope=\"module\" says; host CPU, DRAM, network, fans and cooling are not included otherwise."
	boundaryClient  = "Boundary: measured at the benchmark client (joulemark bench), so network and HTTP time are included; no energy figure."
	boundaryEngine  = "Boundary: what the inference engine reports on its own /metrics (vLLM or SGLang names); no energy figure."
	boundarySampler = "Boundary: the exporter's own sampling and NVML health; no energy figure."
	boundaryCost    = "Boundary: the pods' GPU energy (GPU board, or on C2C superchips the GPU module with its Grace CPU and memory: energy_scope on joulemark_gpu_info) × the facility PUE (joulemark_pue); no host CPU or DRAM outside a module. Priced with joulemark_energy_price_per_kwh (its currency) and joulemark_carbon_intensity_gco2e_per_kwh, gauges the operator exposes (docs/analyze.md, \"Cost and carbon\"): where one is missing the figure is absent, never 0."
	boundaryHost    = "Boundary: host CPU packages and DRAM as RAPL estimates them; no PSU loss, fans, NICs or disks, and no GPU."
)

// Units Grafana knows; the J/token figure has no built-in unit, so it uses
// Grafana's custom suffix syntax.
const (
	unitWatt          = "watt"
	unitJoule         = "joule"
	unitJoulePerToken = "suffix: J/token"
	unitTokensPerSec  = "suffix: tokens/s"
	unitSeconds       = "s"
	unitRatio         = "percentunit"
	unitCelsius       = "celsius"
	unitBytes         = "bytes"
	unitHertz         = "hertz"
	unitReqPerSec     = "reqps"
	unitPerSecond     = "cps"
	unitNone          = "none"
	unitCount         = "short"
	unitMoneyPerHour  = "suffix: /h"
	unitGCO2ePerHour  = "suffix: gCO2e/h"
)

// datasource is the reference every panel and query uses: the dashboard's
// datasource template variable.
func datasource() common.DataSourceRef {
	return common.DataSourceRef{Type: new("prometheus"), Uid: new("${datasource}")}
}

// query is one PromQL target.
type query struct {
	expr    string
	legend  string
	instant bool // one value at the end of the range (stats and tables over the range)
	table   bool // table format (one row per series, labels as columns)
}

func buildTargets(qs []query) []cog.Builder[variants.Dataquery] {
	out := make([]cog.Builder[variants.Dataquery], 0, len(qs))
	for i, q := range qs {
		b := prometheus.NewDataqueryBuilder().
			Datasource(datasource()).
			Expr(q.expr).
			RefId(string(rune('A' + i)))
		if q.legend != "" {
			b = b.LegendFormat(q.legend)
		}
		if q.instant {
			b = b.Instant()
		} else {
			b = b.Range()
		}
		if q.table {
			b = b.Format(prometheus.PromQueryFormatTable)
		}
		if step := minStep(q.expr); step != "" {
			b = b.Interval(step)
		}
		out = append(out, b)
	}
	return out
}

// panelBuilder is what every SDK panel builder offers; common sets the parts
// all joulemark panels share.
type panelBuilder[B any] interface {
	cog.Builder[dashboard.Panel]
	Title(string) B
	Description(string) B
	Unit(string) B
	Datasource(common.DataSourceRef) B
	Span(uint32) B
	Height(uint32) B
	Targets([]cog.Builder[variants.Dataquery]) B
}

// panelSpec is the shared part of a panel: what it shows, how it is sized,
// and the sentence saying what it measures; boundary is appended to it.
type panelSpec struct {
	title, desc, boundary, unit string
	w, h                        uint32
	queries                     []query
}

func apply[B panelBuilder[B]](b B, s panelSpec) B {
	w, h := s.w, s.h
	if w == 0 {
		w = 12
	}
	if h == 0 {
		h = 8
	}
	return b.Title(s.title).
		Description(s.desc + " " + s.boundary).
		Unit(s.unit).
		Datasource(datasource()).
		Span(w).
		Height(h).
		Targets(buildTargets(s.queries))
}

// Template variables.

func datasourceVariable() *dashboard.DatasourceVariableBuilder {
	return dashboard.NewDatasourceVariableBuilder("datasource").
		Label("Data source").
		Description("The Prometheus (or Prometheus-compatible: Mimir, Thanos, VictoriaMetrics) that scrapes the joulemark exporters and receives the benchmark's remote write.").
		Type("prometheus")
}

// labelVariable is a query variable over label_values of a contract metric.
func labelVariable(name, label, help, selector string, multi bool) *dashboard.QueryVariableBuilder {
	q := "label_values(" + selector + ", " + name + ")"
	b := dashboard.NewQueryVariableBuilder(name).
		Label(label).
		Description(help).
		Datasource(datasource()).
		Query(dashboard.StringOrMap{String: new(q)}).
		Definition(q).
		Refresh(dashboard.VariableRefreshOnTimeRangeChanged).
		Sort(dashboard.VariableSortAlphabeticalAsc)
	if multi {
		// ".*" also matches series without the label (a Prometheus whose
		// scrape config does not set node), so "All" never hides data.
		b = b.Multi(true).IncludeAll(true).AllValue(".*")
	}
	return b
}

func nodeVariable() *dashboard.QueryVariableBuilder {
	return labelVariable("node", "Node",
		"GPU node: the node label the scrape config sets on exporter and engine targets (deploy/prometheus).",
		contract.GPUInfo, true)
}

func namespaceVariable() *dashboard.QueryVariableBuilder {
	return labelVariable("namespace", "Namespace",
		"Namespace of the pods holding GPUs (the exporter's joulemark_pod_energy_joules_total, from the kubelet).",
		contract.PodEnergy, true)
}

func podVariable() *dashboard.QueryVariableBuilder {
	return labelVariable("pod", "Pod",
		"Pod holding GPUs, in the selected namespaces.",
		`joulemark_pod_energy_joules_total{namespace=~"$namespace"}`, true)
}

// modelVariable selects model_name values of the engines' token counters.
func modelVariable() *dashboard.QueryVariableBuilder {
	q := "label_values(namespace_pod_model_name:joulemark_generation_tokens:rate5m, model_name)"
	return dashboard.NewQueryVariableBuilder("model").
		Label("Model").
		Description("Served model (the engines' model_name label, vLLM and SGLang).").
		Datasource(datasource()).
		Query(dashboard.StringOrMap{String: new(q)}).
		Definition(q).
		Refresh(dashboard.VariableRefreshOnTimeRangeChanged).
		Sort(dashboard.VariableSortAlphabeticalAsc).
		Multi(true).IncludeAll(true).AllValue(".*")
}

func gpuVariable() *dashboard.QueryVariableBuilder {
	return labelVariable("gpu", "GPU",
		"GPU index on the node (the exporter's gpu label).",
		`joulemark_gpu_info{node=~"$node"}`, true)
}

func runVariable(multi bool) *dashboard.QueryVariableBuilder {
	b := labelVariable("run_id", "Run",
		"Benchmark run id (the exporter's lifecycle phase markers).",
		contract.PhaseActive, multi)
	return b.Sort(dashboard.VariableSortAlphabeticalDesc)
}

// Annotations.

// phaseAnnotations marks the lifecycle phases of the selected runs: a region
// while each phase is active, and a marker at each exact start timestamp.
func phaseAnnotations(runMatcher string) []cog.Builder[dashboard.AnnotationQuery] {
	ds := datasource()
	return []cog.Builder[dashboard.AnnotationQuery]{
		dashboard.NewAnnotationQueryBuilder().
			Name("Lifecycle phases").
			Datasource(ds).
			Enable(true).
			IconColor("rgba(0, 211, 255, 1)").
			Expr(`max by (run_id, phase) (joulemark_phase_active{run_id` + runMatcher + `}) == 1`).
			Step("1s").
			TitleFormat("{{phase}}").
			TextFormat("run {{run_id}}: {{phase}} phase").
			TagKeys("run_id,phase"),
		dashboard.NewAnnotationQueryBuilder().
			Name("Phase starts (exact)").
			Datasource(ds).
			Enable(true).
			IconColor("rgba(255, 152, 48, 1)").
			Expr(`max by (run_id, phase) (joulemark_phase_start_timestamp_seconds{run_id` + runMatcher + `}) * 1000`).
			Step("10s").
			UseValueForTime(true).
			TitleFormat("{{phase}} starts").
			TextFormat("run {{run_id}}: {{phase}} starts (exporter timestamp)").
			TagKeys("run_id,phase"),
	}
}

// statPanel is a single-value panel showing the last non-null value.
func statPanel(s panelSpec) *stat.PanelBuilder {
	return apply(stat.NewPanelBuilder(), s).ReduceOptions(lastValue()).Orientation(common.VizOrientationAuto)
}

// timeSeries is a time-series panel with a legend and a shared tooltip.
func timeSeries(s panelSpec) *timeseries.PanelBuilder {
	return withViz(apply(timeseries.NewPanelBuilder(), s))
}

// vizBuilder is a panel builder with a legend and a tooltip.
type vizBuilder[B any] interface {
	Legend(cog.Builder[common.VizLegendOptions]) B
	Tooltip(cog.Builder[common.VizTooltipOptions]) B
}

// withViz shows the legend below the graph and every series in the tooltip.
func withViz[B vizBuilder[B]](b B) B {
	return b.Legend(common.NewVizLegendOptionsBuilder().
		ShowLegend(true).
		DisplayMode(common.LegendDisplayModeList).
		Placement(common.LegendPlacementBottom)).
		Tooltip(common.NewVizTooltipOptionsBuilder().
			Mode(common.TooltipDisplayModeMulti).
			Sort(common.SortOrderDescending))
}

// lastValue makes a stat panel show the last non-null value.
func lastValue() *common.ReduceDataOptionsBuilder {
	return common.NewReduceDataOptionsBuilder().Calcs([]string{"lastNotNull"})
}

// thresholds returns a green/red threshold set with red from value at.
func thresholds(at float64) *dashboard.ThresholdsConfigBuilder {
	return dashboard.NewThresholdsConfigBuilder().
		Mode(dashboard.ThresholdsModeAbsolute).
		Steps([]dashboard.Threshold{{Color: "green"}, {Value: new(at), Color: "red"}})
}
