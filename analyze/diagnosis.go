package analyze

import (
	"github.com/joulemark/joulemark/internal/stats"

	"fmt"
	"maps"
	"slices"
	"strings"
)

// Diagnosis rules (the LLMPerf analysis), each applied with the numbers
// behind its verdict.
const (
	RulePrefillSlow  = "prefill_slow" // TTFT rising (or over its SLO) while nothing waits
	RuleQueueing     = "queueing"     // the waiting queue grows: batch or KV memory limit
	RuleKVEvictions  = "kv_evictions" // KV cache near full with preemptions: bimodal latency
	RuleClientBound  = "client_bound" // GPUs idle while latency climbs: client, network or router
	risingFactor     = 1.25           // last third / first third that counts as rising
	kvFull           = 0.95           // KV cache usage counted as full
	gpuIdle          = 0.5            // mean GPU utilization under which the GPUs idle
	waitingQueueSize = 1.0            // mean waiting requests that count as a queue
)

// Diagnosis is report.json "diagnosis".
type Diagnosis struct {
	// Healthy: no rule fired (rules skipped for lack of data are listed in
	// Skipped and do not count).
	Healthy  bool              `json:"healthy"`
	Findings []Finding         `json:"findings"`
	Skipped  map[string]string `json:"skipped,omitempty"` // rule → the data it lacked
}

// Finding is one rule that fired, with its evidence.
type Finding struct {
	Rule     string             `json:"rule"`
	Verdict  string             `json:"verdict"`
	Evidence map[string]float64 `json:"evidence"`
}

// thirds are the medians of v's first and last third (v in completion
// order); ok false under 6 values.
func thirds(v []float64) (first, last float64, ok bool) {
	n := len(v)
	if n < 6 {
		return 0, 0, false
	}
	med := func(x []float64) float64 { return stats.Median(slices.Clone(x)) }
	return med(v[:n/3]), med(v[n-n/3:]), true
}

func rising(first, last float64) bool { return last > first*risingFactor && last > first }

// diagnose applies the rules to the server view and the client's latencies.
func (c *computation) diagnose() {
	dg := &Diagnosis{Findings: []Finding{}, Skipped: map[string]string{}}
	c.r.Diagnosis = dg
	sv := c.r.Server
	// The successful formal requests' TTFTs in completion order: the TTFT
	// plot's values (c.requests).
	ttft := c.pd.TTFT
	lat := make([]float64, 0, len(c.formal))
	for _, i := range c.formal {
		if r := &c.d.Requests[i]; r.Success {
			lat = append(lat, r.Latency)
		}
	}
	tf, tl, tOK := thirds(ttft)
	lf, ll, lOK := thirds(lat)
	p95 := c.r.Latency.TTFTSeconds.P95
	slo := c.r.Goodput.TTFTSLOSeconds
	ttftBad := tOK && rising(tf, tl) || p95 != nil && slo != nil && *p95 > *slo
	ttftEv := func(ev map[string]float64) map[string]float64 {
		if tOK {
			ev["ttft_first_third_median_seconds"], ev["ttft_last_third_median_seconds"] = tf, tl
		}
		if p95 != nil {
			ev["ttft_p95_seconds"] = *p95
		}
		if slo != nil {
			ev["ttft_slo_seconds"] = *slo
		}
		return ev
	}
	add := func(rule, verdict string, ev map[string]float64) {
		dg.Findings = append(dg.Findings, Finding{Rule: rule, Verdict: verdict, Evidence: ev})
	}
	w := sv.Waiting
	switch {
	case !sv.Available || w.Max == nil:
		dg.Skipped[RulePrefillSlow] = "no waiting-queue metric"
		dg.Skipped[RuleQueueing] = "no waiting-queue metric"
	default:
		if *w.Max < 0.5 && ttftBad {
			add(RulePrefillSlow, fmt.Sprintf("prefill is slow: TTFT rises or misses its SLO while no request waits (waiting max %.0f)", *w.Max),
				ttftEv(map[string]float64{"waiting_max": *w.Max}))
		}
		if *w.Mean >= waitingQueueSize && w.FirstThirdMean != nil && w.LastThirdMean != nil && rising(*w.FirstThirdMean, *w.LastThirdMean) {
			ev := map[string]float64{"waiting_mean": *w.Mean, "waiting_max": *w.Max,
				"waiting_first_third_mean": *w.FirstThirdMean, "waiting_last_third_mean": *w.LastThirdMean}
			if sv.Running.Max != nil {
				ev["running_max"] = *sv.Running.Max
			}
			add(RuleQueueing, fmt.Sprintf("requests queue: waiting grows from %.1f to %.1f (mean %.1f); the batch or KV memory limit is reached", *w.FirstThirdMean, *w.LastThirdMean, *w.Mean),
				ttftEv(ev))
		}
	}
	switch {
	case !sv.Available || sv.KVCache.Max == nil || sv.Preemptions == nil:
		dg.Skipped[RuleKVEvictions] = "no KV-cache usage or preemption metric"
	case *sv.KVCache.Max >= kvFull && *sv.Preemptions > 0:
		ev := map[string]float64{"kv_cache_max": *sv.KVCache.Max, "preemptions": *sv.Preemptions}
		lp := c.r.Latency.LatencySeconds
		if lp.P50 != nil && lp.P99 != nil && *lp.P50 > 0 {
			ev["latency_p99_over_p50"] = *lp.P99 / *lp.P50
		}
		add(RuleKVEvictions, fmt.Sprintf("KV cache full (max %.0f%%) with %.0f preemptions: evicted requests recompute, latency turns bimodal", 100**sv.KVCache.Max, *sv.Preemptions), ev)
	}
	u := sv.GPUUtilization
	switch {
	case u.Mean == nil:
		dg.Skipped[RuleClientBound] = "no GPU utilization"
	case !lOK && !ttftBad:
		dg.Skipped[RuleClientBound] = "too few requests for a latency trend"
	case *u.Mean < gpuIdle && (lOK && rising(lf, ll) || ttftBad):
		ev := ttftEv(map[string]float64{"gpu_utilization_mean": *u.Mean})
		if lOK {
			ev["latency_first_third_median_seconds"], ev["latency_last_third_median_seconds"] = lf, ll
		}
		add(RuleClientBound, fmt.Sprintf("GPUs mostly idle (utilization %.0f%%) while latency climbs: the client, the network or a router holds requests back", 100**u.Mean), ev)
	}
	dg.Healthy = len(dg.Findings) == 0
}

// diagnosisMarkdown renders the diagnosis.
func diagnosisMarkdown(p func(string, ...any), dg *Diagnosis) {
	if dg == nil {
		return
	}
	p("## Diagnosis\n\n")
	if dg.Healthy {
		p("No rule fired.")
	}
	for _, f := range dg.Findings {
		var ev []string
		for _, k := range slices.Sorted(maps.Keys(f.Evidence)) {
			ev = append(ev, fmt.Sprintf("%s %.4g", k, f.Evidence[k]))
		}
		p("- **%s**: %s. Evidence: %s.\n", f.Rule, mdEscape(f.Verdict), strings.Join(ev, ", "))
	}
	if len(dg.Skipped) > 0 {
		var sk []string
		for _, k := range slices.Sorted(maps.Keys(dg.Skipped)) {
			sk = append(sk, k+" ("+dg.Skipped[k]+")")
		}
		if dg.Healthy {
			p(" ")
		}
		p("Not checked: %s.", strings.Join(sk, ", "))
	}
	p("\n\n")
}
