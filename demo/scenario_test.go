package demo

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/joulemark/joulemark/internal/contract"
	"github.com/joulemark/joulemark/internal/testkit/testenv"
	"github.com/joulemark/joulemark/report"
)

// scenarioConfig is a short demo of one scenario: 2 GPUs (the engine holds
// both), a 10 s formal phase, the demo's default engine, load and SLOs.
func scenarioConfig(t *testing.T, scenario string) Config {
	c := Defaults()
	c.Dir = t.TempDir()
	c.RunID = "scenario"
	c.GPUs = 2
	c.Idle = 3 * time.Second
	c.WarmupRequests = 8
	c.Formal = 10 * time.Second
	c.ReleaseHold = 2 * time.Second
	c.ReleaseMaxWait = 30 * time.Second
	c.Engine.StartupDelay = 2 * time.Second
	c.Engine.ShutdownDelay = 200 * time.Millisecond
	c.Sim.RampSeconds, c.Sim.DecayTau = 0.5, 0.5
	if err := ApplyScenario(&c, scenario); err != nil {
		t.Fatal(err)
	}
	if testing.Verbose() {
		c.Out = os.Stderr
	}
	return c
}

// TestDemoScenarios runs each scenario through the whole pipeline (engine,
// GPUs, exporter, Prometheus, benchmark, analysis): its rule fires and no
// other, with evidence and thresholds in report.md; the healthy run fires
// none, on vLLM's names and on SGLang's; SGLang's names also carry a queue
// and evictions (sglang:num_queue_reqs, sglang:token_usage,
// sglang:num_retracted_requests_total).
func TestDemoScenarios(t *testing.T) {
	testenv.SkipIfShort(t, "end-to-end demo runs (~40 s each, in parallel)")
	for _, tc := range []struct {
		name, scenario, dialect, rule string
	}{
		{"healthy", ScenarioHealthy, contract.EngineVLLM, ""},
		{"healthy sglang", ScenarioHealthy, contract.EngineSGLang, ""},
		{"queueing", ScenarioQueueing, contract.EngineVLLM, report.RuleQueueing},
		{"kv evictions", ScenarioKVEvictions, contract.EngineVLLM, report.RuleKVEvictions},
		{"slow prefill", ScenarioSlowPrefill, contract.EngineVLLM, report.RulePrefillSlow},
		{"client bound", ScenarioClientBound, contract.EngineVLLM, report.RuleClientBound},
		{"queueing sglang", ScenarioQueueing, contract.EngineSGLang, report.RuleQueueing},
		{"kv evictions sglang", ScenarioKVEvictions, contract.EngineSGLang, report.RuleKVEvictions},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := scenarioConfig(t, tc.scenario)
			cfg.Engine.Dialect = tc.dialect
			res := runDemo(t, cfg)
			rep := res.Report
			sv, dg := rep.Server, rep.Diagnosis
			if !sv.Available || sv.Engine != tc.dialect {
				t.Fatalf("server view: available %v, engine %q (%s), want %s", sv.Available, sv.Engine, sv.Reason, tc.dialect)
			}
			var rules []string
			for _, f := range dg.Findings {
				rules = append(rules, f.Rule)
			}
			if want := tc.rule; len(rules) != min(len(want), 1) || want != "" && rules[0] != want {
				t.Fatalf("rules %v, want [%s]; findings %+v; server %s", rules, want, dg.Findings, serverSummary(sv))
			}
			if want := runScenario(tc.scenario); rep.Scenario != want || rep.Run == nil || rep.Run.Scenario != want {
				t.Errorf("scenario %q (run %+v), want %q", rep.Scenario, rep.Run, want)
			}
			if len(dg.Skipped) > 0 {
				t.Errorf("rules skipped: %v", dg.Skipped)
			}
			for _, f := range dg.Findings {
				if err := f.CheckThresholds(); err != nil {
					t.Error(err)
				}
			}
			md, err := os.ReadFile(res.ReportDir + "/" + report.FileMarkdown)
			if err != nil {
				t.Fatal(err)
			}
			html, err := os.ReadFile(res.ReportDir + "/" + report.FileHTML)
			if err != nil {
				t.Fatal(err)
			}
			for file, b := range map[string][]byte{report.FileMarkdown: md, report.FileHTML: html} {
				if tc.rule != "" && (!strings.Contains(string(b), tc.rule) || !strings.Contains(string(b), "threshold crossed")) {
					t.Errorf("%s lacks the %s finding with its thresholds", file, tc.rule)
				}
			}
			// What vLLM would show: memory in use, a KV cache in use.
			if gm := rep.GPUMemory; gm == nil || gm.PeakBytes == nil || *gm.PeakBytes <= 0 {
				t.Errorf("GPU memory peak %+v, want above 0", gm)
			}
			if sv.KVCache.Mean == nil || *sv.KVCache.Mean <= 0 {
				t.Errorf("KV cache usage mean %v, want above 0", sv.KVCache.Mean)
			}
			t.Logf("%s: %s; findings %+v", tc.name, serverSummary(sv), dg.Findings)
		})
	}
}

func serverSummary(sv *report.Server) string {
	f := func(p *float64) float64 {
		if p == nil {
			return -1
		}
		return *p
	}
	return strings.Join([]string{
		"running " + ftoa(f(sv.Running.Mean)) + "/" + ftoa(f(sv.Running.Max)),
		"waiting " + ftoa(f(sv.Waiting.Mean)), "kv max " + ftoa(f(sv.KVCache.Max)),
		"preemptions " + ftoa(f(sv.Preemptions)), "gpu util " + ftoa(f(sv.GPUUtilization.Mean)),
	}, ", ")
}

func ftoa(v float64) string { return strconv.FormatFloat(v, 'g', 4, 64) }
