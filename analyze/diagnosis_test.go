package analyze

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/joulemark/joulemark/internal/contract"
	"github.com/joulemark/joulemark/internal/runarchive"
	"github.com/joulemark/joulemark/internal/testkit/golden"
	"github.com/joulemark/joulemark/report"
)

// setEngine replaces one engine series of the fixture by f(t), t in seconds
// after the fixture's base.
func setEngine(d *RunData, name string, f func(t float64) float64) {
	var s []Sample
	for t := -5.0; t <= 145; t++ {
		s = append(s, Sample{fixtureBase + t, f(t)})
	}
	d.Engine.Series[name] = [][]Sample{s}
}

// ramp rises linearly from a to b over the formal phase [30, 130].
func ramp(a, b float64) func(float64) float64 {
	return func(t float64) float64 { return a + (b-a)*min(max(t-30, 0), 100)/100 }
}

// TestDiagnosisRules: fixtures built to show each situation fire its rule
// and only it, with its evidence and thresholds; the healthy fixture and
// near misses fire none.
func TestDiagnosisRules(t *testing.T) {
	constant := func(v float64) func(float64) float64 { return func(float64) float64 { return v } }
	idleGPUs := func(d *RunData) {
		for i := range d.GPUs {
			for k := range d.GPUs[i].Utilization {
				d.GPUs[i].Utilization[k].V = 0.2
			}
		}
	}
	for _, tc := range []struct {
		name     string
		change   func(d *RunData)
		rules    []string
		evidence string // a key the first finding must carry
	}{
		{"healthy", func(*RunData) {}, nil, ""},
		{"prefill slow", func(d *RunData) {
			for i := range d.Requests {
				if r := &d.Requests[i]; r.Formal && r.Success {
					r.TTFT = 0.8 // over the 500 ms SLO, nothing waits
				}
			}
		}, []string{report.RulePrefillSlow}, "ttft_p50_seconds"},
		{"TTFT within its SLO", func(d *RunData) {
			for i := range d.Requests {
				if r := &d.Requests[i]; r.Formal && r.Success {
					r.TTFT = 0.45
				}
			}
		}, nil, ""},
		// The case: a closed loop at its batch limit, the queue
		// full from the start and draining towards the end.
		{"queueing, full from the start", func(d *RunData) {
			setEngine(d, "vllm:num_requests_waiting", ramp(20, 7.5))
			for i := range d.Requests {
				if r := &d.Requests[i]; r.Formal && r.Success {
					r.TTFT = 11
				}
			}
		}, []string{report.RuleQueueing}, "waiting_share"},
		{"queueing beside an idle replica of the model", func(d *RunData) {
			setEngine(d, "vllm:num_requests_waiting", ramp(20, 7.5))
			for _, n := range []string{"vllm:num_requests_waiting", "vllm:num_requests_running"} {
				s := slices.Clone(d.Engine.Series[n][0])
				for k := range s {
					s[k].V = 0
				}
				d.Engine.Series[n] = append(d.Engine.Series[n], s)
			}
		}, []string{report.RuleQueueing}, "waiting_share"},
		{"queueing, growing", func(d *RunData) {
			setEngine(d, "vllm:num_requests_waiting", ramp(0, 20))
		}, []string{report.RuleQueueing}, "waiting_mean"},
		{"queueing, late: a queue that grows in the last third", func(d *RunData) {
			setEngine(d, "vllm:num_requests_waiting", func(t float64) float64 { return max(0, t-100) })
		}, []string{report.RuleQueueing}, "waiting_last_third_mean"},
		{"queueing at the KV limit, the batch below its max", func(d *RunData) {
			setEngine(d, "vllm:num_requests_waiting", constant(3))
			setEngine(d, "vllm:num_requests_running", func(t float64) float64 { return 2 + 2*math.Sin(t) })
			setEngine(d, "vllm:kv_cache_usage_perc", constant(0.95))
		}, []string{report.RuleQueueing}, "kv_cache_max"},
		{"waiting below the batch limit", func(d *RunData) {
			setEngine(d, "vllm:num_requests_waiting", constant(3))
			setEngine(d, "vllm:num_requests_running", func(t float64) float64 { return 2 + 2*math.Sin(t) })
		}, nil, ""},
		{"a burst of waiting", func(d *RunData) {
			setEngine(d, "vllm:num_requests_waiting", func(t float64) float64 {
				if t >= 60 && t < 80 {
					return 10
				}
				return 0
			})
		}, nil, ""},
		{"kv evictions", func(d *RunData) {
			setEngine(d, "vllm:kv_cache_usage_perc", constant(0.99))
			setEngine(d, "vllm:num_preemptions_total", ramp(0, 12))
			setEngine(d, "vllm:num_requests_waiting", ramp(0, 20)) // the evicted wait: no queueing finding beside it
		}, []string{report.RuleKVEvictions}, "preemptions"},
		{"preemptions with room in the KV cache", func(d *RunData) {
			setEngine(d, "vllm:kv_cache_usage_perc", constant(0.6))
			setEngine(d, "vllm:num_preemptions_total", ramp(0, 12))
		}, nil, ""},
		{"client bound: requests outside the engine", func(d *RunData) {
			idleGPUs(d)
			setEngine(d, "vllm:num_requests_running", constant(1))
			for i := range d.Requests {
				if r := &d.Requests[i]; r.Formal && r.Success {
					r.Latency, r.Send, r.TTFT = 4, r.End-4, 3.1 // 3 s before the engine sees it
				}
			}
		}, []string{report.RuleClientBound}, "outside_engine_share"},
		{"client bound: the client short of its concurrency", func(d *RunData) {
			idleGPUs(d)
			setEngine(d, "vllm:num_requests_running", constant(1))
			d.RunInfo.Concurrency = 16
		}, []string{report.RuleClientBound}, "client_concurrency"},
		// The bench's own report (the archive's manifest): it could not
		// offer its load, whatever the GPUs did; the queue it left is
		// not reported beside it.
		{"client bound: the client's CPUs saturated", func(d *RunData) {
			d.Client = &ClientReport{CPURatio: 0.97, CPUSaturated: true}
			setEngine(d, "vllm:num_requests_waiting", ramp(20, 7.5))
		}, []string{report.RuleClientBound}, "client_cpu_ratio"},
		{"client bound: an open loop dispatched late", func(d *RunData) {
			d.Client = &ClientReport{CPURatio: 0.4, LagP99Seconds: 0.2, MaxLagSeconds: 0.05, Lagging: true}
		}, []string{report.RuleClientBound}, "dispatch_lag_p99_seconds"},
		{"a busy client that kept up", func(d *RunData) {
			d.Client = &ClientReport{CPURatio: 0.85, LagP99Seconds: 0.01, MaxLagSeconds: 0.05}
		}, nil, ""},
		{"a client flag its figures do not bear out", func(d *RunData) {
			d.Client = &ClientReport{CPURatio: 0.5, CPUSaturated: true, LagP99Seconds: 0.01, MaxLagSeconds: 0.05, Lagging: true}
		}, nil, ""},
		{"idle GPUs, the engine holds the requests", func(d *RunData) {
			idleGPUs(d)
			setEngine(d, "vllm:num_requests_running", constant(1))
			d.RunInfo.Concurrency = 1
		}, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := fixture()
			tc.change(d)
			r, _, err := computeSeries(d, fixtureParams())
			if err != nil {
				t.Fatal(err)
			}
			dg := r.Diagnosis
			var got []string
			for _, f := range dg.Findings {
				got = append(got, f.Rule)
				if f.Verdict == "" || len(f.Evidence) == 0 || len(f.Thresholds) == 0 {
					t.Errorf("finding %s without verdict, evidence or thresholds: %+v", f.Rule, f)
				}
				if err := f.CheckThresholds(); err != nil {
					t.Error(err)
				}
			}
			if !reflect.DeepEqual(got, tc.rules) || dg.Healthy != (len(tc.rules) == 0) {
				t.Fatalf("rules %v (healthy %v), want %v; findings %+v", got, dg.Healthy, tc.rules, dg.Findings)
			}
			if tc.evidence != "" {
				if _, ok := dg.Findings[0].Evidence[tc.evidence]; !ok {
					t.Errorf("evidence %v lacks %s", dg.Findings[0].Evidence, tc.evidence)
				}
			}
			if len(dg.Skipped) != 0 {
				t.Errorf("rules skipped with full data: %v", dg.Skipped)
			}
		})
	}
}

func TestDiagnosisSkipsWithoutEngineMetrics(t *testing.T) {
	d := fixture()
	d.Engine = nil
	r, _, err := computeSeries(d, fixtureParams())
	if err != nil {
		t.Fatal(err)
	}
	if r.Server.Available || r.Server.Reason == "" {
		t.Errorf("server %+v, want unavailable with a reason", r.Server)
	}
	for _, rule := range []string{report.RulePrefillSlow, report.RuleQueueing, report.RuleKVEvictions, report.RuleClientBound} {
		if r.Diagnosis.Skipped[rule] == "" {
			t.Errorf("rule %s not listed as skipped: %v", rule, r.Diagnosis.Skipped)
		}
	}
}

// TestServerTokenCrossCheck: an engine that generated more tokens than the
// client counted, beyond 2 %, served other traffic: engine_shared, which
// excludes the run; one that generated fewer is the warning
// server_tokens_mismatch. Near misses under the tolerance (+1.5 %, +1.9 %,
// −1.9 %) are neither, and the run stays valid.
func TestServerTokenCrossCheck(t *testing.T) {
	for _, tc := range []struct {
		perSecond float64
		want      string // the flag raised, "" none
	}{{10, ""}, {10.15, ""}, {10.19, ""}, {9.81, ""}, {10.5, contract.FlagEngineShared}, {15, contract.FlagEngineShared}, {9, contract.FlagServerTokensMismatch}} {
		d := fixture()
		setEngine(d, "vllm:generation_tokens_total", ramp(0, 100*tc.perSecond))
		r, _, err := computeSeries(d, fixtureParams())
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, f := range r.Flags {
			if f.Code == contract.FlagEngineShared || f.Code == contract.FlagServerTokensMismatch {
				got = append(got, f.Code)
				if f.Excluding != (f.Code == contract.FlagEngineShared) {
					t.Errorf("server at %g tokens/s: %s excluding %v", tc.perSecond, f.Code, f.Excluding)
				}
			}
		}
		if want := []string{tc.want}; tc.want == "" && len(got) != 0 || tc.want != "" && !slices.Equal(got, want) || r.Server.TokenDifferenceRatio == nil {
			t.Errorf("server at %g tokens/s: flags %v (difference %v), want %q", tc.perSecond, got, num(r.Server.TokenDifferenceRatio, "%.4f"), tc.want)
		}
		if r.Valid != (tc.want != contract.FlagEngineShared) {
			t.Errorf("server at %g tokens/s: valid %v with flags %v", tc.perSecond, r.Valid, got)
		}
	}
}

// TestEngineSharedFirstInMarkdown: report.md names an engine_shared run
// not valid by that flag and lists it before the warnings raised earlier.
func TestEngineSharedFirstInMarkdown(t *testing.T) {
	d := fixture()
	setEngine(d, "vllm:generation_tokens_total", ramp(0, 1500))
	r, _, err := computeSeries(d, fixtureParams())
	if err != nil {
		t.Fatal(err)
	}
	r.Flags = append([]report.Flag{{Code: contract.FlagExporterRestarted, Message: "a warning raised first"}}, r.Flags...)
	var md bytes.Buffer
	if err := WriteMarkdown(&md, r); err != nil {
		t.Fatal(err)
	}
	s := md.String()
	if !strings.Contains(s, "**NOT VALID** (excluded from formal results and comparisons: by `engine_shared`)") {
		t.Errorf("verdict does not name engine_shared:\n%s", s[:min(len(s), 400)])
	}
	shared, warning := strings.Index(s, "| `engine_shared` | yes |"), strings.Index(s, "| `exporter_restarted` | no |")
	if shared < 0 || warning < 0 || shared > warning {
		t.Errorf("flags table: engine_shared at %d, the earlier warning at %d; want the excluding flag first", shared, warning)
	}
}

// TestServerTokenResolution: with the engine scraped every 10 s, a 4 %
// difference is within what the scrape resolution explains: not flagged.
func TestServerTokenResolution(t *testing.T) {
	d := fixture()
	var s []Sample
	for t := -5.0; t <= 145; t += 10 {
		s = append(s, Sample{fixtureBase + t, ramp(0, 1040)(t)})
	}
	d.Engine.Series["vllm:generation_tokens_total"] = [][]Sample{s}
	r, _, err := computeSeries(d, fixtureParams())
	if err != nil {
		t.Fatal(err)
	}
	sv := r.Server
	if sv.OutputTokensResolution == nil || *sv.OutputTokensResolution < 40 || slices.ContainsFunc(r.Flags, func(f report.Flag) bool {
		return f.Code == contract.FlagServerTokensMismatch || f.Code == contract.FlagEngineShared
	}) {
		t.Errorf("resolution %v, flags %v: want a resolution above the 40-token difference and no flag", sv.OutputTokensResolution, r.Flags)
	}
}

// TestServerTokenCrossCheckScrapeResolution: an engine scraped every 8 s
// (…, 27, 35, …, 123, 131), the load starting and stopping at the formal
// boundaries 30 and 130 between scrapes. The interpolated increase misses
// 2.75 % of a correct count: not flagged, a difference beyond the
// resolution still is. An engine stopped before its scrape after the
// formal phase (last sample 123) bounds its counter below only: a client
// counting fewer tokens than that is flagged, nothing else is.
func TestServerTokenCrossCheckScrapeResolution(t *testing.T) {
	for _, tc := range []struct {
		perSecond float64
		last      float64 // last engine sample
		flagged   bool
	}{{10, 145, false}, {13, 145, true}, {7, 145, true}, {10, 123, false}, {7, 123, false}, {13, 123, true}} {
		d := fixture()
		f := ramp(0, 100*tc.perSecond)
		var s []Sample
		for t := -5.0; t <= tc.last; t += 8 {
			s = append(s, Sample{fixtureBase + t, f(t)})
		}
		d.Engine.Series["vllm:generation_tokens_total"] = [][]Sample{s}
		r, _, err := computeSeries(d, fixtureParams())
		if err != nil {
			t.Fatal(err)
		}
		sv := r.Server
		flagged := slices.ContainsFunc(r.Flags, func(f report.Flag) bool {
			return f.Code == contract.FlagServerTokensMismatch && !f.Excluding || f.Code == contract.FlagEngineShared && f.Excluding
		})
		if flagged != tc.flagged || sv.TokenDifferenceRatio == nil || (sv.OutputTokensResolution == nil) != (tc.last < 130) {
			t.Errorf("server at %g tokens/s, 8 s scrapes up to %g: flagged %v (difference %s, resolution %s), want %v",
				tc.perSecond, tc.last, flagged, num(sv.TokenDifferenceRatio, "%.3f"), num(sv.OutputTokensResolution, "%.0f"), tc.flagged)
		}
	}
}

// TestGoldenDiagnosisSection: report.md's server view and diagnosis for a
// run whose KV cache filled with preemptions while requests queued.
func TestGoldenDiagnosisSection(t *testing.T) {
	d := fixture()
	setEngine(d, "vllm:num_requests_waiting", ramp(0, 20))
	setEngine(d, "vllm:kv_cache_usage_perc", func(float64) float64 { return 0.99 })
	setEngine(d, "vllm:num_preemptions_total", ramp(0, 12))
	r, _, err := computeSeries(d, fixtureParams())
	if err != nil {
		t.Fatal(err)
	}
	var md bytes.Buffer
	if err := WriteMarkdown(&md, r); err != nil {
		t.Fatal(err)
	}
	s := md.String()
	i, j := strings.Index(s, "## Server view"), strings.Index(s, "## Goodput")
	golden.Compare(t, "diagnosis.section.md", []byte(s[i:j]))
}

// TestClientReportFromArchive: the bench's report of its own load comes
// from the archive's manifest (flags and figures) and makes the diagnosis
// client-bound; without the archive there is none.
func TestClientReportFromArchive(t *testing.T) {
	if (*BenchArchive)(nil).clientReport() != nil {
		t.Error("a client report without an archive")
	}
	run, err := runarchive.Create(t.TempDir(), "fixture-1")
	if err != nil {
		t.Fatal(err)
	}
	man := runarchive.Manifest{RunID: "fixture-1", Flags: []string{contract.FlagClientLag},
		Load: runarchive.LoadInfo{Mode: "poisson", ClientCPURatio: 0.3, LagP99Seconds: 0.2, MaxLagSeconds: 0.05}}
	b, _ := json.Marshal(man)
	for name, data := range map[string][]byte{runarchive.ManifestFile: b, runarchive.RequestsFile: nil} {
		if err := run.WriteFile(name, data); err != nil {
			t.Fatal(err)
		}
	}
	arch, err := readBenchArchive(run, "fixture-1")
	if err != nil {
		t.Fatal(err)
	}
	d := fixture()
	d.Client = arch.clientReport()
	want := ClientReport{CPURatio: 0.3, LagP99Seconds: 0.2, MaxLagSeconds: 0.05, Lagging: true}
	if d.Client == nil || *d.Client != want {
		t.Fatalf("client report %+v, want %+v", d.Client, want)
	}
	r, _, err := computeSeries(d, fixtureParams())
	if err != nil {
		t.Fatal(err)
	}
	if f := r.Diagnosis.Findings; len(f) != 1 || f[0].Rule != report.RuleClientBound || f[0].Thresholds["dispatch_lag_p99_seconds_above"] != 0.05 {
		t.Errorf("findings %+v, want client_bound on the dispatch lag", f)
	}
}
