// Package rules holds joulemark's Prometheus recording and alerting rules,
// embedded in the binary (joulemark rules print) and unit-tested with
// promtool test rules.
package rules

import (
	"bytes"
	"embed"
	"fmt"
	"io"
	"slices"
)

//go:embed recording.yml alerts.yml
var fsys embed.FS

// FileNames are the embedded rule files, in print order.
var FileNames = []string{"recording.yml", "alerts.yml"}

// RecordingRuleNames are the names every recording rule records, for code
// that checks queries against them (dashboards). A test keeps it in sync
// with the YAML.
var RecordingRuleNames = []string{
	"instance:joulemark_gpu_power_watts:sum",
	"joulemark:gpu_power_watts:sum",
	"instance:joulemark_gpu_energy_joules:rate1m",
	"joulemark:gpu_energy_joules:rate5m",
	"joulemark:gpu_energy_joules:increase1h",
	"run_phase:joulemark_phase_energy_joules:sum",
	"run:joulemark_gpu_energy_joules:rate1m",
	"run:joulemark_bench_output_tokens:rate1m",
	"run:joulemark_joules_per_token:ratio_rate1m",
	"run:joulemark_bench_requests:rate1m",
	"run:joulemark_bench_ttft_slo_met:ratio_rate1m",
	"run:joulemark_bench_tpot_slo_met:ratio_rate1m",
	"run:joulemark_bench_goodput_upper_bound:ratio_rate1m",
	"namespace_pod:joulemark_energy_joules:rate5m",
	"namespace:joulemark_energy_joules:rate5m",
	"namespace_pod_model_name:joulemark_generation_tokens:rate5m",
	"namespace_pod:joulemark_joules_per_generation_token:ratio_rate5m",
	"model_name:joulemark_energy_joules:rate5m",
	"model_name:joulemark_generation_tokens:rate5m",
	"model_name:joulemark_joules_per_generation_token:ratio_rate5m",
	"node:joulemark_unallocated_energy_joules:rate5m",
	"namespace_pod:joulemark_idle_allocated_energy_joules:rate5m",
	"node:joulemark_gpu_energy_joules:rate5m",
	"node:joulemark_generation_tokens:rate5m",
	"node:joulemark_joules_per_generation_token:ratio_rate5m",
	"model_name:joulemark_cost_per_hour:rate5m",
	"model_name:joulemark_gco2e_per_hour:rate5m",
	"namespace:joulemark_cost_per_hour:rate5m",
	"namespace:joulemark_gco2e_per_hour:rate5m",
	"model_name:joulemark_cost_per_1m_generation_tokens:ratio_rate5m",
}

// AlertNames are the alerting rules' names.
var AlertNames = []string{
	"JoulemarkExporterDown",
	"JoulemarkSamplerErrors",
	"JoulemarkGPUDown",
	"JoulemarkPowerAtLimit",
	"JoulemarkReleaseNotClosed",
}

// File returns one embedded rule file.
func File(name string) ([]byte, error) {
	if !slices.Contains(FileNames, name) {
		return nil, fmt.Errorf("no rule file %q (have %v)", name, FileNames)
	}
	return fsys.ReadFile(name)
}

// All is every group of every file as one Prometheus rule file.
func All() []byte {
	var b bytes.Buffer
	b.WriteString("# joulemark recording and alerting rules (joulemark rules print)\ngroups:\n")
	for _, n := range FileNames {
		data, _ := fsys.ReadFile(n) // embedded: cannot fail
		// Each file is "comments, groups:, then the group list"; keep the list.
		_, groups, ok := bytes.Cut(data, []byte("\ngroups:\n"))
		if !ok {
			panic("rules: " + n + " lacks a top-level groups: key")
		}
		b.Write(groups)
	}
	return b.Bytes()
}

// Print writes All to w.
func Print(w io.Writer) error {
	_, err := w.Write(All())
	return err
}
