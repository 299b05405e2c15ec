package runset

import (
	"fmt"
	"slices"
	"strings"

	"github.com/joulemark/joulemark/internal/contract"
)

// GroupKey is the run's value of each comma-separated dotted report key
// (e.g. "run.model,run.concurrency"), joined by ", " with "-" for a missing
// key; ok is false when the run has none of them.
func (r *Run) GroupKey(keys string) (key string, ok bool) {
	var vals []string
	for k := range strings.SplitSeq(keys, ",") {
		v, found := r.Lookup(strings.TrimSpace(k))
		if !found || v == "" {
			v = "-"
		} else {
			ok = true
		}
		vals = append(vals, v)
	}
	return strings.Join(vals, ", "), ok
}

// IdentityValues are the run's values of the identity keys
// (contract.RunIdentityKeys under "run."), nil when its report has no run
// section (reports from before run identity).
func (r *Run) IdentityValues() []string {
	if _, ok := r.Lookup("run.run_id"); !ok {
		if _, ok := r.Lookup("run.model"); !ok {
			return nil
		}
	}
	out := make([]string, len(contract.RunIdentityKeys))
	for i, k := range contract.RunIdentityKeys {
		out[i], _ = r.Lookup("run." + k)
		if k == "mode" {
			out[i] = r.Mode()
		}
	}
	return out
}

// Mode is the run's measurement mode (contract.ModeLifecycle or
// ModeAttached): report.json "mode", else run.mode, else lifecycle (reports
// from before the mode).
func (r *Run) Mode() string {
	if r.Report.Mode != "" {
		return r.Report.Mode
	}
	if r.Report.Run != nil {
		return r.Report.Run.EffectiveMode()
	}
	return contract.ModeLifecycle
}

// IdentitySplit names, for each run, how it differs in identity from the
// other runs sharing its group key: "" when every run of its group has the
// same identity (or none is known), else "key=value ..." over the identity
// keys that differ within the group. Runs with a non-empty split must not
// be pooled with the rest of their group.
func IdentitySplit(runs []*Run, groupKey func(*Run) string) []string {
	byKey := map[string][]int{}
	ids := make([][]string, len(runs))
	for i, r := range runs {
		ids[i] = r.IdentityValues()
		k := groupKey(r)
		byKey[k] = append(byKey[k], i)
	}
	out := make([]string, len(runs))
	for _, members := range byKey {
		var differ []int // identity key indexes that differ within the group
		for ki := range contract.RunIdentityKeys {
			first, seen := "", false
			for _, m := range members {
				if ids[m] == nil {
					continue
				}
				if !seen {
					first, seen = ids[m][ki], true
				} else if ids[m][ki] != first {
					differ = append(differ, ki)
					break
				}
			}
		}
		if len(differ) == 0 {
			continue
		}
		for _, m := range members {
			var parts []string
			for _, ki := range differ {
				v := "?"
				if ids[m] != nil {
					v = ids[m][ki]
					if contract.RunIdentityKeys[ki] == "dataset_sha256" && len(v) > 12 {
						v = v[:12]
					}
				}
				parts = append(parts, contract.RunIdentityKeys[ki]+"="+v)
			}
			out[m] = strings.Join(parts, " ")
		}
	}
	return out
}

// ConfigKeys are the identity keys a load sweep keeps fixed: everything but
// the load point.
var ConfigKeys = []string{"model", "engine", "engine_version", "gpu_name", "gpus", "dataset_sha256", "mode"}

// IdentityConflict names the run.* keys among keys whose values differ
// between the runs that carry a run section, e.g. "run.model (a, b)"; "" when
// they agree (runs without a run section are not compared).
func IdentityConflict(runs []*Run, keys []string) string {
	var out []string
	for _, k := range keys {
		var vals []string
		for _, r := range runs {
			if r.IdentityValues() == nil {
				continue
			}
			v, _ := r.Lookup("run." + k)
			if k == "mode" {
				v = r.Mode()
			}
			if !slices.Contains(vals, v) {
				vals = append(vals, v)
			}
		}
		if len(vals) > 1 {
			out = append(out, "run."+k+" ("+strings.Join(vals, ", ")+")")
		}
	}
	return strings.Join(out, ", ")
}

// GroupRuns splits runs by GroupKey(keys), groups in order of first
// appearance; a run with none of the keys is a group of its own, named by
// its run name.
func GroupRuns(runs []*Run, keys string) (order []string, groups map[string][]*Run) {
	groups = map[string][]*Run{}
	for _, r := range runs {
		k, ok := r.GroupKey(keys)
		if !ok {
			k = r.Name
		}
		if _, seen := groups[k]; !seen {
			order = append(order, k)
		}
		groups[k] = append(groups[k], r)
	}
	return order, groups
}

// LifecycleBasis are the metrics of the cold-start lifecycle basis, which
// an attached run does not measure.
var LifecycleBasis = []Metric{LifecycleJPT, StartupEnergy}

// SteadyBasis drops the lifecycle-basis metrics when any run is attached:
// the method never ranks runs on two bases, so a set with an attached run
// is ranked on steady-state figures alone. note says so ("" when nothing
// was dropped).
func SteadyBasis(runs []*Run, metrics []Metric) (kept []Metric, note string) {
	var attached []string
	for _, r := range runs {
		if r.Mode() == contract.ModeAttached {
			attached = append(attached, r.Name)
		}
	}
	if len(attached) == 0 {
		return metrics, ""
	}
	var dropped []string
	for _, m := range metrics {
		if slices.ContainsFunc(LifecycleBasis, func(l Metric) bool { return l.Key == m.Key }) {
			dropped = append(dropped, m.Key)
			continue
		}
		kept = append(kept, m)
	}
	if len(dropped) == 0 {
		return metrics, ""
	}
	return kept, fmt.Sprintf("attached runs (%s) measure no lifecycle: every run is ranked on steady-state figures, without %s",
		strings.Join(attached, ", "), strings.Join(dropped, ", "))
}
