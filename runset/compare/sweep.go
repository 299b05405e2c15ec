package compare

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/joulemark/joulemark/runset"
)

// Sweep is one configuration measured at several load points: runs alike in
// everything but run.concurrency / run.rate. Its knee is the highest load
// point that, with every lighter point, meets the SLOs; the point after it
// carries the diagnosis of why the next step broke them.
type Sweep struct {
	Key    string       `json:"key"` // what the points share
	Points []SweepPoint `json:"points"`
	// Knee is the load of the last point meeting the SLOs ("" when even the
	// lightest misses them); After is the next point's load and its
	// diagnosis findings.
	Knee           string   `json:"knee"`
	After          string   `json:"after,omitempty"`
	AfterDiagnosis []string `json:"after_diagnosis,omitempty"`
	// KneeValue is the knee's load (concurrency or rate), 0 without one.
	KneeValue float64 `json:"knee_value"`
	// The SLOs the points were held to (seconds; nil: none), from the
	// lightest point's report.
	TTFTSLOSeconds *float64 `json:"ttft_slo_seconds"`
	TPOTSLOSeconds *float64 `json:"tpot_slo_seconds"`
}

// SweepPoint is one load point of a sweep.
type SweepPoint struct {
	Load     string   `json:"load"` // "concurrency 12", "rate 5 req/s (poisson)"
	Value    float64  `json:"value"`
	Runs     []string `json:"runs"`
	MeetsSLO bool     `json:"meets_slo"`
	Why      string   `json:"why,omitempty"` // which SLO it misses
	// Medians over the point's runs (nil where no run has the figure).
	SteadyStateJPT *float64 `json:"median_steady_state_joules_per_token"`
	LifecycleJPT   *float64 `json:"median_full_lifecycle_joules_per_token"`
	TTFTP95        *float64 `json:"median_ttft_p95_seconds"`
	TPOTP95        *float64 `json:"median_tpot_p95_seconds"`
	// Invalid are the point's invalid runs: shown, never in a median, the
	// SLO verdict or the knee. A point with no valid run has no verdict.
	Invalid []InvalidRun `json:"invalid_runs,omitempty"`
}

// InvalidRun is an invalid run of a sweep point with its own figures.
type InvalidRun struct {
	Run            string   `json:"run"`
	Reason         string   `json:"reason"`
	SteadyStateJPT *float64 `json:"steady_state_joules_per_token"`
	LifecycleJPT   *float64 `json:"full_lifecycle_joules_per_token"`
	TTFTP95        *float64 `json:"ttft_p95_seconds"`
	TPOTP95        *float64 `json:"tpot_p95_seconds"`
}

// Measured reports whether the point has a valid run.
func (p SweepPoint) Measured() bool { return len(p.Runs) > len(p.Invalid) }

func value(r *runset.Run, m runset.Metric) *float64 {
	if v, ok := m.Value(&r.Report); ok {
		return &v
	}
	return nil
}

// sweepIdentity are the run.* keys a sweep's points share.
var sweepIdentity = []string{"model", "engine", "engine_version", "gpu_name", "gpus", "dataset_sha256", "load_mode"}

// pointRuns are the runs of one load point of a candidate sweep.
type pointRuns struct {
	value float64
	load  string
	runs  []*runset.Run
}

// sweeps finds the sweeps among the included runs: two or more load points
// of one configuration.
func sweeps(runs []*runset.Run, groupKey func(*runset.Run) string) []Sweep {
	order, byKey := sweepCandidates(runs, groupKey)
	var out []Sweep
	for _, key := range order {
		pts := byKey[key]
		if len(pts) < 2 {
			continue
		}
		var ps []*pointRuns
		for _, p := range pts {
			ps = append(ps, p)
		}
		slices.SortFunc(ps, func(a, b *pointRuns) int { return cmp.Compare(a.value, b.value) })
		out = append(out, buildSweep(key, ps))
	}
	return out
}

// sweepCandidates sorts the runs by configuration (group key and
// sweepIdentity) and load point, configurations in order of first
// appearance.
func sweepCandidates(runs []*runset.Run, groupKey func(*runset.Run) string) ([]string, map[string]map[float64]*pointRuns) {
	byKey := map[string]map[float64]*pointRuns{}
	var order []string
	for _, r := range runs {
		if r.Report.Run == nil {
			continue
		}
		id := r.Report.Run
		var vals []string
		for _, k := range sweepIdentity {
			v, _ := r.Lookup("run." + k)
			vals = append(vals, v)
		}
		key := groupKey(r) + " | " + strings.Join(vals, " ")
		v := float64(id.Concurrency)
		if id.Rate > 0 {
			v = id.Rate
		}
		if byKey[key] == nil {
			byKey[key] = map[float64]*pointRuns{}
			order = append(order, key)
		}
		p := byKey[key][v]
		if p == nil {
			p = &pointRuns{value: v, load: id.Load()}
			byKey[key][v] = p
		}
		p.runs = append(p.runs, r)
	}
	return order, byKey
}

// buildSweep judges the points of one sweep, lightest first, and finds the
// knee and the diagnosis of the point after it.
func buildSweep(key string, ps []*pointRuns) Sweep {
	first := ps[0].runs[0].Report.Run
	sw := Sweep{Key: fmt.Sprintf("%s, %s %s on %d×%s", strings.SplitN(key, " | ", 2)[0], first.Model, first.Engine, first.GPUs, first.GPUName)}
	broken := false
	last := -1 // the last measured point
	for _, p := range ps {
		sp, valid := sweepPoint(p)
		sw.Points = append(sw.Points, sp)
		if len(valid) == 0 {
			continue
		}
		pt := &sw.Points[len(sw.Points)-1]
		if !broken && !pt.MeetsSLO {
			broken = true
			sw.After = p.load
			for _, r := range valid {
				if d := r.Report.Diagnosis; d != nil {
					for _, f := range d.Findings {
						sw.AfterDiagnosis = append(sw.AfterDiagnosis, f.Rule+": "+f.Verdict)
					}
				}
			}
			if last >= 0 {
				sw.Knee, sw.KneeValue = ps[last].load, ps[last].value
			}
		}
		if !broken {
			last = len(sw.Points) - 1
		}
	}
	if !broken && last >= 0 {
		sw.Knee, sw.KneeValue = ps[last].load, ps[last].value
	}
	lightest := &ps[0].runs[0].Report
	sw.TTFTSLOSeconds, sw.TPOTSLOSeconds = lightest.Goodput.TTFTSLOSeconds, lightest.Goodput.TPOTSLOSeconds
	return sw
}

// sweepPoint is one load point with its medians over its valid runs and
// its SLO verdict (false without a valid run); valid are those runs.
func sweepPoint(p *pointRuns) (SweepPoint, []*runset.Run) {
	var valid []*runset.Run
	sp := SweepPoint{Load: p.load, Value: p.value, MeetsSLO: true}
	for _, r := range p.runs {
		sp.Runs = append(sp.Runs, r.Name)
		if reason := r.InvalidReason(); reason != "" {
			sp.Invalid = append(sp.Invalid, InvalidRun{Run: r.Name, Reason: reason,
				SteadyStateJPT: value(r, runset.SteadyStateJPT), LifecycleJPT: value(r, runset.LifecycleJPT),
				TTFTP95: value(r, runset.TTFTP95), TPOTP95: value(r, runset.TPOTP95)})
			continue
		}
		valid = append(valid, r)
	}
	if len(valid) == 0 {
		sp.MeetsSLO = false
		return sp, nil
	}
	sp.SteadyStateJPT, sp.LifecycleJPT = median(valid, runset.SteadyStateJPT), median(valid, runset.LifecycleJPT)
	sp.TTFTP95, sp.TPOTP95 = median(valid, runset.TTFTP95), median(valid, runset.TPOTP95)
	var why []string
	for _, r := range valid {
		if w := missesSLO(r); w != "" {
			why = append(why, r.Name+": "+w)
		}
	}
	if len(why) > 0 {
		sp.MeetsSLO, sp.Why = false, strings.Join(why, "; ")
	}
	return sp, valid
}

// missesSLO says which SLO the valid run's p95 TTFT or TPOT misses (""
// when it meets both; a run without an SLO or a figure cannot miss it).
func missesSLO(r *runset.Run) string {
	rep := &r.Report
	var why []string
	check := func(name string, p95, slo *float64) {
		if p95 != nil && slo != nil && *slo > 0 && *p95 > *slo {
			why = append(why, fmt.Sprintf("%s p95 %s ms > SLO %s ms", name, ms(*p95), ms(*slo)))
		}
	}
	check("TTFT", rep.Latency.TTFTSeconds.P95, rep.Goodput.TTFTSLOSeconds)
	check("TPOT", rep.Latency.TPOTSeconds.P95, rep.Goodput.TPOTSLOSeconds)
	return strings.Join(why, ", ")
}

func ms(s float64) string { return strconv.FormatFloat(s*1000, 'f', -1, 64) }
