package benchjob

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/joulemark/joulemark/benchjob/openai/openaitest"
	"github.com/joulemark/joulemark/internal/contract"
	"github.com/joulemark/joulemark/internal/runarchive"
)

// designKeys are the run-archive keys of docs/design.md, each on every line.
var designKeys = []string{"phase", "slot", "send_time", "first_token_time", "end_time", "ttft_seconds",
	"latency_seconds", "tpot_seconds", "output_tokens", "input_tokens", "tokens_source", "success", "error",
	"finish_reason", "itl_seconds"}

func TestRunFullLifecycle(t *testing.T) {
	srv := openaitest.New(openaitest.Behavior{Tokens: 4, MaxModelLen: 8192})
	defer srv.Close()
	exp := newFakeExporter(t, "exp-token-123")
	rw := newRWReceiver(t)
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "api-key")
	tokFile := filepath.Join(dir, "exp-token")
	os.WriteFile(keyFile, []byte("sk-topsecret-42\n"), 0o600)
	os.WriteFile(tokFile, []byte("exp-token-123\n"), 0o600)

	cfg := testConfig(t, srv.BaseURL())
	cfg.Requests = 20
	cfg.WarmupRequests = 3
	cfg.APIKeyFile = keyFile
	cfg.ExporterTokenFile = tokFile
	cfg.Exporters = []string{exp.URL}
	cfg.RemoteWrite.URL = rw.URL + "/api/v1/write"
	cfg.RemoteWrite.HTTP.HTTPHeaders = nil
	cfg.RunID = "lifecycle-1"
	cfg.Scenario = "lifecycle"
	eng := &fakeEngine{}
	opts := testOptions()
	opts.Engine = eng

	res, err := Run(context.Background(), cfg, opts)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if !exp.exited {
		t.Error("the bench stopped the engine but did not report its exit to the exporter")
	}
	if res.Status != runarchive.StatusCompleted || len(flagsBesidesLoad(res.Flags)) != 0 {
		t.Errorf("status %q flags %v", res.Status, res.Flags)
	}
	if s, st := eng.counts(); s != 1 || st != 1 {
		t.Errorf("engine started %d, stopped %d times", s, st)
	}
	want := []contract.Phase{contract.Idle, contract.Startup, contract.Warmup, contract.Formal, contract.Release}
	if got := exp.phases(); !equalPhases(got, want) {
		t.Errorf("exporter phases %v, want %v", got, want)
	}
	if !exp.isEnded() {
		t.Error("exporter run not ended")
	}
	if srv.LastAuth() != "Bearer sk-topsecret-42" {
		t.Errorf("API key not sent: %q", srv.LastAuth())
	}

	recs := checkLifecycleRecords(t, res.ArchiveDir)
	checkRequestSamples(t, rw, recs)
	infos := checkAggregatesAndIdentity(t, rw, res)
	checkLifecycleManifest(t, res, &cfg, exp.URL, infos)
	checkArchiveClean(t, res.ArchiveDir)
	if res.Summary.Started != 20 || res.Summary.Succeeded != 20 || res.Warmup.Started != 3 || res.Summary.TTFT.N != 20 {
		t.Errorf("summary %+v", res.Summary)
	}

	// The same run id again is refused, and the archive is untouched.
	before, _ := os.ReadFile(filepath.Join(res.ArchiveDir, runarchive.RequestsFile))
	_, err = Run(context.Background(), cfg, opts)
	if !errors.Is(err, runarchive.ErrExists) {
		t.Fatalf("second run with the same id: %v", err)
	}
	after, _ := os.ReadFile(filepath.Join(res.ArchiveDir, runarchive.RequestsFile))
	if string(before) != string(after) {
		t.Error("archive changed by a refused run")
	}
}

// checkLifecycleRecords: requests.jsonl has one line per request, the
// design keys on each, and consistent timings.
func checkLifecycleRecords(t *testing.T, dir string) []runarchive.Request {
	t.Helper()
	raws, recs := readRecords(t, dir)
	if len(recs) != 23 {
		t.Fatalf("%d records, want 23", len(recs))
	}
	nWarm := 0
	for i, m := range raws {
		for _, k := range designKeys {
			if _, ok := m[k]; !ok {
				t.Fatalf("record %d lacks %q: keys %v", i, k, slices.Sorted(maps.Keys(m)))
			}
		}
		r := recs[i]
		if r.Phase == "warmup" {
			nWarm++
		}
		if !r.Success || r.TokensSource != runarchive.TokensUsage || r.OutputTokens != r.MaxTokens || r.InputTokens != 7 {
			t.Errorf("record %d: %+v", i, r)
		}
		if r.TTFTSeconds == nil || r.TPOTSeconds == nil || len(r.ITLSeconds) != r.OutputTokens-1 || r.OutputHash == "" {
			t.Errorf("record %d timings: %+v", i, r)
		}
		if !(r.SendTime <= *r.FirstTokenTime && *r.FirstTokenTime <= r.EndTime) {
			t.Errorf("record %d times out of order", i)
		}
		if got := (r.LatencySeconds - *r.TTFTSeconds) / float64(r.OutputTokens-1); math.Abs(got-*r.TPOTSeconds) > 1e-9 {
			t.Errorf("record %d: tpot %g, want %g", i, *r.TPOTSeconds, got)
		}
	}
	if nWarm != 3 {
		t.Errorf("%d warm-up records, want 3", nWarm)
	}

	return recs
}

// checkRequestSamples: every per-request sample reached the remote-write
// receiver, with its labels and the request's end time as timestamp.
func checkRequestSamples(t *testing.T, rw *rwReceiver, recs []runarchive.Request) {
	t.Helper()
	type key struct {
		phase, slot string
		ts          int64
	}
	for _, metric := range []string{contract.RequestOutputTokens, contract.RequestInputTokens, contract.RequestTTFT, contract.RequestLatency, contract.RequestSuccess} {
		got := map[key]float64{}
		for _, s := range rw.named(metric) {
			if s.labels["run_id"] != "lifecycle-1" || len(s.labels) != 4 {
				t.Fatalf("%s labels %v", metric, s.labels)
			}
			k := key{s.labels["phase"], s.labels["slot"], s.ts}
			if _, dup := got[k]; dup {
				t.Fatalf("%s: two samples of one series at one timestamp %v", metric, k)
			}
			got[k] = s.value
		}
		if len(got) != len(recs) {
			t.Fatalf("%s: %d samples, want %d", metric, len(got), len(recs))
		}
		for i, r := range recs {
			ms := int64(math.Floor(r.EndTime * 1000))
			v, ok := got[key{r.Phase, strconv.Itoa(r.Slot), ms}]
			if !ok {
				v, ok = got[key{r.Phase, strconv.Itoa(r.Slot), ms - 1}]
			}
			if !ok {
				v, ok = got[key{r.Phase, strconv.Itoa(r.Slot), ms + 1}]
			}
			if !ok {
				t.Fatalf("%s: no sample for record %d (phase %s slot %d end %d ms)", metric, i, r.Phase, r.Slot, ms)
			}
			var want float64
			switch metric {
			case contract.RequestOutputTokens:
				want = float64(r.OutputTokens)
			case contract.RequestInputTokens:
				want = float64(r.InputTokens)
			case contract.RequestTTFT:
				want = *r.TTFTSeconds
			case contract.RequestLatency:
				want = r.LatencySeconds
			case contract.RequestSuccess:
				want = 1
			}
			if math.Abs(v-want) > 1e-9 {
				t.Errorf("%s record %d: sample %g, archive %g", metric, i, v, want)
			}
		}
	}
}

// checkAggregatesAndIdentity: the aggregates beside the samples, and the
// run's identity pushed at the formal start and the end; it returns the
// identity samples.
func checkAggregatesAndIdentity(t *testing.T, rw *rwReceiver, res *Result) []rwSample {
	t.Helper()
	var lastSuccess float64
	for _, s := range rw.named(contract.BenchRequests) {
		if s.labels["outcome"] == "success" && s.labels["run_id"] == "lifecycle-1" {
			lastSuccess = math.Max(lastSuccess, s.value)
		}
	}
	if lastSuccess != 23 {
		t.Errorf("%s{outcome=success} = %g, want 23", contract.BenchRequests, lastSuccess)
	}
	if len(rw.named(contract.BenchTTFT+"_bucket")) == 0 || len(rw.named(contract.BenchInFlight)) == 0 {
		t.Error("histograms or in-flight gauge missing")
	}
	// The run's identity: joulemark_run_info 1 at the formal start and the
	// end, the same labels as the manifest's run_info.
	infos := rw.named(contract.RunInfo)
	if len(infos) != 2 {
		t.Fatalf("%d %s samples, want 2", len(infos), contract.RunInfo)
	}
	wantInfo := contract.RunIdentity{RunID: "lifecycle-1", Scenario: "lifecycle", Model: "test-model", Engine: "joulemark", EngineVersion: "0.0.0-fake", GPUName: "Fake H100", GPUs: 1,
		LoadMode: "closed", Concurrency: 2, MeanInputTokens: 40, MeanOutputTokens: 4, Mode: contract.ModeLifecycle}
	for _, s := range infos {
		got := contract.RunIdentityFromLabels(s.labels)
		if len(got.DatasetSHA256) != 64 || s.value != 1 {
			t.Errorf("%s %v = %g: want a dataset digest and value 1", contract.RunInfo, s.labels, s.value)
		}
		got.DatasetSHA256 = ""
		if got != wantInfo {
			t.Errorf("%s labels %+v, want %+v", contract.RunInfo, got, wantInfo)
		}
	}
	if infos[0].ts >= infos[1].ts {
		t.Errorf("run info timestamps %d, %d: want the formal start, then the end", infos[0].ts, infos[1].ts)
	}
	wantSamples := int64(0)
	rw.mu.Lock()
	wantSamples = int64(len(rw.samples))
	rw.mu.Unlock()
	if res.RemoteWrite.Acknowledged != wantSamples || res.RemoteWrite.Lost() != 0 {
		t.Errorf("remote write stats %+v, receiver got %d", res.RemoteWrite, wantSamples)
	}

	return infos
}

// checkLifecycleManifest: manifest.json, config.yaml, phases.json and the
// engine log of the run.
func checkLifecycleManifest(t *testing.T, res *Result, cfg *Config, expURL string, infos []rwSample) {
	t.Helper()
	var man runarchive.Manifest
	readJSON(t, filepath.Join(res.ArchiveDir, runarchive.ManifestFile), &man)
	if man.Status != runarchive.StatusCompleted || man.RunID != "lifecycle-1" || man.Engine.Model != "test-model" ||
		man.Engine.MaxModelLen != 8192 || man.Engine.ReportedVer != "0.0.0-fake" || man.Prompts != 23 ||
		len(man.PromptSetSHA256) != 64 || man.Joulemark.Version == "" || man.Host.CPUs == 0 || man.Thinking != "engine_default" {
		t.Errorf("manifest: %+v", man)
	}
	if man.RunInfo == nil || man.RunInfo.Model != "test-model" || man.RunInfo.DatasetSHA256 != contract.RunIdentityFromLabels(infos[0].labels).DatasetSHA256 {
		t.Errorf("manifest run_info %+v, want the pushed identity", man.RunInfo)
	}
	if out, err := exec.Command("git", "rev-parse", "HEAD").Output(); err == nil {
		if man.Git == nil || man.Git.Commit != strings.TrimSpace(string(out)) {
			t.Errorf("manifest git %+v, checkout at %s", man.Git, out)
		}
	}
	if g := man.GPUs[expURL]; len(g) != 1 || g[0].Name != "Fake H100" {
		t.Errorf("manifest GPUs %+v", man.GPUs)
	}
	cy, err := os.ReadFile(filepath.Join(res.ArchiveDir, runarchive.ConfigFile))
	if err != nil || man.ConfigSHA256 != sha256Hex(cy) || man.Config["run_id"] != "lifecycle-1" {
		t.Errorf("config digest %s does not match config.yaml (%v), config %v", man.ConfigSHA256, err, man.Config)
	}
	var back Config
	if err := yaml.Unmarshal(cy, &back); err != nil || back.Requests != 20 || back.IdleDuration != cfg.IdleDuration {
		t.Errorf("config.yaml does not load back: %v %+v", err, back)
	}
	for _, p := range []string{"idle", "startup", "warmup", "formal", "release"} {
		if man.Phases[p] == 0 {
			t.Errorf("manifest lacks phase %s start", p)
		}
	}
	ph := readPhases(t, res.ArchiveDir)
	if len(ph.Exporters) != 1 || ph.Exporters[0].Status == nil || len(ph.Exporters[0].Status.Phases) != 5 {
		t.Errorf("phases.json: %+v", ph)
	}
	logb, err := os.ReadFile(filepath.Join(res.ArchiveDir, runarchive.EngineLogFile))
	if err != nil || !strings.Contains(string(logb), "fake engine: started") {
		t.Errorf("engine log: %q %v", logb, err)
	}
}

// checkArchiveClean: no secret and no leftover file in the archive.
func checkArchiveClean(t *testing.T, dir string) {
	t.Helper()
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		b, _ := os.ReadFile(filepath.Join(dir, e.Name()))
		if strings.Contains(string(b), "sk-topsecret") || strings.Contains(string(b), "exp-token-123") {
			t.Errorf("%s holds a secret", e.Name())
		}
		if strings.HasSuffix(e.Name(), ".partial") || strings.Contains(e.Name(), ".tmp") {
			t.Errorf("leftover %s", e.Name())
		}
	}
}

func equalPhases(a, b []contract.Phase) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestManifestJSONHidesHTTPSecrets(t *testing.T) {
	cfg := Defaults()
	cfg.RemoteWrite.URL = "http://prom:9090/api/v1/write"
	if err := json.Unmarshal([]byte(`{"basic_auth":{"username":"u","password":"hunter2"}}`), &cfg.RemoteWrite.HTTP); err != nil {
		t.Fatal(err)
	}
	b, m, err := configYAML(&cfg)
	if err != nil {
		t.Fatal(err)
	}
	j, _ := json.Marshal(m)
	if strings.Contains(string(b), "hunter2") || !strings.Contains(string(b), "<secret>") || strings.Contains(string(j), "hunter2") {
		t.Errorf("config YAML: %s", b)
	}
}

var _ = time.Second

// flagsBesidesLoad is flags without client_cpu_saturated: that warning
// says how busy the machine running the test was (CI neighbours), not
// what the code under test did.
func flagsBesidesLoad(flags []string) []string {
	return slices.DeleteFunc(slices.Clone(flags), func(f string) bool { return f == contract.FlagClientCPU })
}
