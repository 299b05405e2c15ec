package analyze

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/joulemark/joulemark/internal/contract"
	"github.com/joulemark/joulemark/report"
)

// Thresholds of the rules; docs/analyze.md says why each is where it is.
const (
	// waitingQueueSize: mean waiting requests that count as a queue.
	waitingQueueSize = 1.0
	// waitingPersistent: share of the formal phase's engine samples with
	// a request waiting that makes the queue persistent, not a burst.
	waitingPersistent = 0.5
	// risingFactor: last third over first third that counts as growing.
	risingFactor = 1.25
	// batchAtLimit: running mean over running max at which the batch is
	// held at its ceiling (the engine's limit, not the offered load).
	batchAtLimit = 0.9
	// kvFull: KV cache usage (max over the formal phase) counted as full.
	kvFull = 0.9
	// preemptionsPerRequest: preemptions per formal request that count
	// as evictions (at least one).
	preemptionsPerRequest = 0.01
	// nothingWaits: mean waiting requests under which nothing queues: the
	// complement of queueing's queue. Not 0: the engines admit at step
	// boundaries, so requests that arrive during a long prefill step
	// wait for it to end.
	nothingWaits = waitingQueueSize
	// gpuIdle: mean GPU utilization under which the GPUs idle.
	gpuIdle = 0.5
	// outsideEngine: share of the client's in-flight requests the engine
	// does not hold (running + waiting) above which requests are held
	// between client and engine (network, router, a proxy).
	outsideEngine = 0.5
	// clientShort: the client's in-flight requests over its configured
	// concurrency under which the client does not keep its offered load.
	clientShort = 0.5
)

// situation is what the rules read: the engine's view of the formal phase
// beside the client's.
type situation struct {
	waitMean, waitMax, waitShare float64
	waitFirst, waitLast          *float64
	runMean, runMax              float64
	kvMax                        *float64
	preempt                      *float64
	util                         *float64
	client                       *ClientReport
	clientInFlight               float64 // mean requests in flight at the client (Little's law)
	concurrency                  float64 // configured closed-loop concurrency; 0 when unknown or open loop
	requests                     float64 // formal requests
	ttftP50, slo                 *float64
}

// diagnose applies the rules to the server view and the client's requests.
func (c *computation) diagnose() {
	dg := &report.Diagnosis{Findings: []report.Finding{}, Skipped: map[string]string{}}
	c.r.Diagnosis = dg
	sv := c.r.Server
	fb, ok := c.complete("formal")
	if !sv.Available || !ok || sv.Waiting.Mean == nil || sv.Running.Mean == nil {
		for _, r := range []string{report.RuleClientBound, report.RuleKVEvictions, report.RuleQueueing, report.RulePrefillSlow} {
			dg.Skipped[r] = "no running or waiting-queue metric of the engine"
		}
		dg.Healthy = true
		return
	}
	s := c.situation(fb)
	add := func(f *report.Finding) {
		if f != nil {
			dg.Findings = append(dg.Findings, *f)
		}
	}
	// Most specific first: a finding explains the symptoms of the rules
	// after it (requests held outside the engine leave it idle with high
	// TTFT; evictions make requests wait), so those do not fire beside it.
	switch f := s.clientSaturated(); {
	case f != nil:
		add(f)
	case s.util == nil:
		dg.Skipped[report.RuleClientBound] = "no GPU utilization"
	default:
		add(s.clientBound())
	}
	if s.kvMax == nil || s.preempt == nil {
		dg.Skipped[report.RuleKVEvictions] = "no KV-cache usage or preemption metric"
	} else if len(dg.Findings) == 0 {
		add(s.kvEvictions())
	}
	if len(dg.Findings) == 0 {
		add(s.queueing())
	}
	switch {
	case s.slo == nil || s.ttftP50 == nil:
		dg.Skipped[report.RulePrefillSlow] = "no TTFT SLO (--slo.ttft) to judge TTFT against"
	case len(dg.Findings) == 0:
		add(s.prefillSlow())
	}
	dg.Healthy = len(dg.Findings) == 0
}

// situation gathers the figures the rules read.
func (c *computation) situation(fb PhaseBounds) situation {
	sv := c.r.Server
	s := situation{waitMean: *sv.Waiting.Mean, waitMax: *sv.Waiting.Max, waitFirst: sv.Waiting.FirstThirdMean,
		waitLast: sv.Waiting.LastThirdMean, runMean: *sv.Running.Mean, runMax: *sv.Running.Max,
		kvMax: sv.KVCache.Max, preempt: sv.Preemptions, util: sv.GPUUtilization.Mean,
		ttftP50: c.r.Latency.TTFTSeconds.P50, slo: c.r.Goodput.TTFTSLOSeconds, client: c.d.Client}
	if n := sv.MetricsFound[string(contract.RoleWaiting)]; n != "" && c.d.Engine != nil {
		s.waitShare = shareAtLeast(c.d.Engine.Series[n], fb.Start, fb.End, 1)
	}
	busy := 0.0
	for _, i := range c.formal {
		r := &c.d.Requests[i]
		s.requests++
		busy += max(0, min(r.End, fb.End)-max(r.Send, fb.Start))
	}
	if d := fb.End - fb.Start; d > 0 {
		s.clientInFlight = busy / d
	}
	if ri := c.d.RunInfo; ri != nil && (ri.LoadMode == "closed" || ri.LoadMode == "") {
		s.concurrency = float64(ri.Concurrency)
	}
	return s
}

// shareAtLeast is the largest share, over the series (engine replicas;
// an idle replica has nothing waiting), of a series' samples in [from, to]
// at or above v.
func shareAtLeast(series [][]Sample, from, to, v float64) float64 {
	best := 0.0
	for _, ss := range series {
		n, hit := 0, 0
		for _, x := range ss {
			if x.T >= from && x.T <= to && !math.IsNaN(x.V) {
				n++
				if x.V >= v {
					hit++
				}
			}
		}
		if n > 0 {
			best = max(best, float64(hit)/float64(n))
		}
	}
	return best
}

// clientBound: the GPUs idle while the requests the client has in flight
// are not in the engine (held by the network, a router or a proxy), or the
// client does not keep its configured concurrency.
func (s situation) clientBound() *report.Finding {
	if *s.util >= gpuIdle || s.clientInFlight <= 0 {
		return nil
	}
	inEngine := s.runMean + s.waitMean
	outside := max(0, 1-inEngine/s.clientInFlight)
	short := s.concurrency > 0 && s.clientInFlight < clientShort*s.concurrency
	if outside <= outsideEngine && !short {
		return nil
	}
	ev := map[string]float64{"gpu_utilization_mean": *s.util, "client_in_flight_mean": s.clientInFlight,
		"engine_requests_mean": inEngine, "outside_engine_share": outside}
	th := map[string]float64{"gpu_utilization_mean_below": gpuIdle}
	if outside > outsideEngine {
		th["outside_engine_share_above"] = outsideEngine
	}
	verdict := fmt.Sprintf("the client has %.1f requests in flight, the engine holds %.1f (%.0f%% outside it) while the GPUs are %.0f%% utilized: the network, a router or a proxy between client and engine holds requests back",
		s.clientInFlight, inEngine, 100*outside, 100**s.util)
	if s.concurrency > 0 {
		ev["client_concurrency"] = s.concurrency
		if short {
			ev["client_in_flight_over_concurrency"] = s.clientInFlight / s.concurrency
			th["client_in_flight_over_concurrency_below"] = clientShort
			verdict = fmt.Sprintf("the client keeps %.1f requests in flight of its concurrency %.0f while the GPUs are %.0f%% utilized: the client cannot offer its load (its CPU, its connections, its rate)",
				s.clientInFlight, s.concurrency, 100**s.util)
		}
	}
	return &report.Finding{Rule: report.RuleClientBound, Verdict: verdict, Evidence: ev, Thresholds: th}
}

// clientSaturated: the bench reports it could not offer its load (the
// run's archive): its CPUs saturated, or an open loop's dispatch lagging
// past max_lag. The figures decide, not the flags alone.
func (s situation) clientSaturated() *report.Finding {
	c := s.client
	if c == nil {
		return nil
	}
	cpu := c.CPUSaturated && c.CPURatio > contract.ClientCPUSaturated
	lag := c.Lagging && c.MaxLagSeconds > 0 && c.LagP99Seconds > c.MaxLagSeconds
	if !cpu && !lag {
		return nil
	}
	ev := map[string]float64{"client_cpu_ratio": c.CPURatio}
	th := map[string]float64{}
	var why []string
	if cpu {
		th["client_cpu_ratio_above"] = contract.ClientCPUSaturated
		why = append(why, fmt.Sprintf("its CPUs %.0f%% busy", 100*c.CPURatio))
	}
	if lag {
		ev["dispatch_lag_p99_seconds"], ev["max_lag_seconds"] = c.LagP99Seconds, c.MaxLagSeconds
		th["dispatch_lag_p99_seconds_above"] = c.MaxLagSeconds
		why = append(why, fmt.Sprintf("its arrivals dispatched %.0f ms late at p99, over max_lag %.0f ms", 1000*c.LagP99Seconds, 1000*c.MaxLagSeconds))
	}
	if s.util != nil {
		ev["gpu_utilization_mean"] = *s.util
	}
	return &report.Finding{Rule: report.RuleClientBound, Evidence: ev, Thresholds: th,
		Verdict: fmt.Sprintf("the client reports it could not offer its load (%s): latency and throughput measure the client, not the engine; give the benchmark more CPUs or fewer requests in flight",
			strings.Join(why, "; "))}
}

// kvEvictions: the engine preempted requests with its KV cache full.
func (s situation) kvEvictions() *report.Finding {
	need := max(1, math.Ceil(preemptionsPerRequest*s.requests))
	if *s.kvMax < kvFull || *s.preempt < need {
		return nil
	}
	return &report.Finding{Rule: report.RuleKVEvictions,
		Verdict: fmt.Sprintf("KV cache full (max %.0f%%) with %.0f preemptions in %.0f requests: evicted requests wait and recompute, latency turns bimodal; give the KV cache more memory or admit fewer sequences",
			100**s.kvMax, *s.preempt, s.requests),
		Evidence: map[string]float64{"kv_cache_max": *s.kvMax, "preemptions": *s.preempt, "formal_requests": s.requests,
			"waiting_mean": s.waitMean},
		Thresholds: map[string]float64{"kv_cache_max_at_least": kvFull, "preemptions_at_least": need}}
}

// queueing: requests wait persistently (or ever more) while the engine
// runs at its batch or KV limit. A queue full from the start counts.
func (s situation) queueing() *report.Finding {
	persistent := s.waitShare >= waitingPersistent
	growing := s.waitFirst != nil && s.waitLast != nil && *s.waitLast > *s.waitFirst*risingFactor && *s.waitLast > *s.waitFirst
	batchFull := s.runMax > 0 && s.runMean >= batchAtLimit*s.runMax
	kvLimit := s.kvMax != nil && *s.kvMax >= kvFull
	if s.waitMean < waitingQueueSize || !(persistent || growing) || !(batchFull || kvLimit) {
		return nil
	}
	ev := map[string]float64{"waiting_mean": s.waitMean, "waiting_max": s.waitMax, "waiting_share": s.waitShare,
		"running_mean": s.runMean, "running_max": s.runMax}
	th := map[string]float64{"waiting_mean_at_least": waitingQueueSize}
	if persistent {
		th["waiting_share_at_least"] = waitingPersistent
	} else {
		ev["waiting_first_third_mean"], ev["waiting_last_third_mean"] = *s.waitFirst, *s.waitLast
		th["waiting_last_third_mean_above"] = risingFactor * *s.waitFirst
	}
	limit := fmt.Sprintf("the batch held at %.1f of its max %.0f", s.runMean, s.runMax)
	if batchFull {
		ev["running_mean_over_max"] = s.runMean / s.runMax
		th["running_mean_over_max_at_least"] = batchAtLimit
	} else {
		limit = fmt.Sprintf("the KV cache full (max %.0f%%)", 100**s.kvMax)
	}
	if s.kvMax != nil {
		ev["kv_cache_max"] = *s.kvMax
	}
	if kvLimit {
		th["kv_cache_max_at_least"] = kvFull
	}
	if s.ttftP50 != nil {
		ev["ttft_p50_seconds"] = *s.ttftP50
	}
	return &report.Finding{Rule: report.RuleQueueing,
		Verdict: fmt.Sprintf("requests queue: %.1f wait on average (some waiting in %.0f%% of the formal phase) with %s; the engine's limit, not the GPUs' speed, sets TTFT: raise --max-num-seqs or the KV cache, or lower the offered load",
			s.waitMean, 100*s.waitShare, limit),
		Evidence: ev, Thresholds: th}
}

// prefillSlow: the median TTFT misses its SLO while nothing waits.
func (s situation) prefillSlow() *report.Finding {
	if *s.ttftP50 <= *s.slo || s.waitMean >= nothingWaits {
		return nil
	}
	return &report.Finding{Rule: report.RulePrefillSlow,
		Verdict: fmt.Sprintf("prefill is slow: median TTFT %.3f s over the %.3f s SLO while nothing waits (waiting mean %.2f); long prompts or a slow prefill, not a queue",
			*s.ttftP50, *s.slo, s.waitMean),
		Evidence: map[string]float64{"ttft_p50_seconds": *s.ttftP50, "ttft_slo_seconds": *s.slo,
			"ttft_p50_over_slo": *s.ttftP50 / *s.slo, "waiting_mean": s.waitMean, "running_mean": s.runMean},
		Thresholds: map[string]float64{"ttft_p50_over_slo_above": 1, "waiting_mean_below": nothingWaits}}
}

// diagnosisMarkdown renders the diagnosis: per finding its verdict and a
// table of its evidence, each figure beside the threshold it crossed.
func diagnosisMarkdown(p func(string, ...any), dg *report.Diagnosis) {
	if dg == nil {
		return
	}
	p("## Diagnosis\n\n")
	if dg.Healthy {
		p("No rule fired.")
	}
	for _, f := range dg.Findings {
		p("**%s**: %s.\n\n| evidence | value | threshold crossed |\n|---|---:|---|\n", f.Rule, mdEscape(f.Verdict))
		for _, row := range evidenceRows(f) {
			p("| %s | %s | %s |\n", row[0], row[1], row[2])
		}
		p("\n")
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
	if dg.Healthy || len(dg.Skipped) > 0 {
		p("\n\n")
	}
}

// evidenceRows are a finding's figures, those with a threshold first, each
// as figure, value and the threshold it crossed ("" for context figures).
func evidenceRows(f report.Finding) [][3]string {
	crossed := map[string]string{}
	for k, th := range f.Thresholds {
		if figure, sign, _, ok := report.ThresholdFigure(k); ok {
			crossed[figure] = fmt.Sprintf("%s %.4g", sign, th)
		}
	}
	var with, without [][3]string
	for _, k := range slices.Sorted(maps.Keys(f.Evidence)) {
		row := [3]string{"`" + k + "`", fmt.Sprintf("%.4g", f.Evidence[k]), crossed[k]}
		if row[2] != "" {
			with = append(with, row)
		} else {
			without = append(without, row)
		}
	}
	return append(with, without...)
}
