package runset

import (
	"fmt"
	"strings"
)

// RequiredReportKeys are the top-level keys of every report analyze writes
// (docs/design.md, "Report (report.json) — stable keys"); a figure that
// could not be computed is null, never absent.
var RequiredReportKeys = []string{
	"run_id", "valid", "flags", "stages", "energy", "release", "requests", "tokens",
	"throughput_tokens_per_second", "avg_gpu_power_watts", "full_lifecycle_joules_per_token",
	"steady_state", "latency", "goodput", "lifecycle_estimate", "measurement",
}

// checkReportKeys says which required keys the decoded report lacks, so
// that `{}` or another JSON file is never compared as an empty report.
func checkReportKeys(raw map[string]any) error {
	var missing []string
	for _, k := range RequiredReportKeys {
		if _, ok := raw[k]; !ok {
			missing = append(missing, k)
		}
	}
	switch {
	case len(missing) == len(RequiredReportKeys):
		return fmt.Errorf("not a joulemark report: none of its keys (%s)", strings.Join(RequiredReportKeys, ", "))
	case len(missing) > 0:
		return fmt.Errorf("not a complete joulemark report: missing %s", strings.Join(missing, ", "))
	}
	if id, ok := raw["run_id"].(string); !ok || id == "" {
		return fmt.Errorf("not a joulemark report: run_id is %v, want a run id", raw["run_id"])
	}
	return nil
}
