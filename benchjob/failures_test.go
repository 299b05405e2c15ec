package benchjob

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/common/config"

	"github.com/joulemark/joulemark/benchjob/openai/openaitest"
	"github.com/joulemark/joulemark/internal/contract"
	"github.com/joulemark/joulemark/internal/phaseapi"
	"github.com/joulemark/joulemark/internal/runarchive"
)

func TestRunNoUsageCompletesFlagged(t *testing.T) {
	srv := openaitest.New(openaitest.Behavior{NoUsage: true})
	defer srv.Close()
	cfg := testConfig(t, srv.BaseURL())
	res, err := runFake(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != runarchive.StatusCompleted || !slices.Contains(res.Flags, contract.FlagUsageMissing) || res.Summary.Succeeded != 10 {
		t.Fatalf("status %s flags %v summary %+v", res.Status, res.Flags, res.Summary)
	}
	_, recs := readRecords(t, res.ArchiveDir)
	for _, r := range recs {
		if r.TokensSource != runarchive.TokensChunks || r.OutputTokens != r.Chunks || r.OutputTokens == 0 || r.InputTokens == 0 {
			t.Errorf("record %+v", r)
		}
	}
	if res.Summary.TokensSource[runarchive.TokensChunks] != 10 {
		t.Errorf("tokens source %v", res.Summary.TokensSource)
	}
}

func TestRunFailedRequestsRecorded(t *testing.T) {
	srv := openaitest.New(openaitest.Behavior{FailEvery: 3, FailStatus: 503})
	defer srv.Close()
	rw := newRWReceiver(t)
	cfg := testConfig(t, srv.BaseURL())
	cfg.WarmupRequests = 0
	cfg.Requests = 12
	cfg.Concurrency = 1
	cfg.RemoteWrite.URL = rw.URL
	res, err := runFake(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res.Summary.Failed != 4 || res.Summary.Errors["http_status"] != 4 || res.Summary.ErrorRate != 4.0/12 {
		t.Fatalf("summary %+v", res.Summary)
	}
	_, recs := readRecords(t, res.ArchiveDir)
	failed := 0
	for _, r := range recs {
		if r.Success {
			continue
		}
		failed++
		if r.ErrorClass != "http_status" || r.StatusCode != 503 || r.OutputTokens != 0 || r.TTFTSeconds != nil ||
			!strings.Contains(r.Error, "503") || r.LatencySeconds <= 0 {
			t.Errorf("failed record %+v", r)
		}
	}
	if failed != 4 {
		t.Errorf("%d failed records", failed)
	}
	// A failure writes output tokens 0, success 0, its latency, no TTFT.
	if n := len(rw.named(contract.RequestTTFT)); n != 8 {
		t.Errorf("%d TTFT samples, want 8 (none for failures)", n)
	}
	zeros := 0
	for _, s := range rw.named(contract.RequestSuccess) {
		if s.value == 0 {
			zeros++
		}
	}
	if zeros != 4 || len(rw.named(contract.RequestLatency)) != 12 {
		t.Errorf("%d success=0 samples, %d latency samples", zeros, len(rw.named(contract.RequestLatency)))
	}
}

func TestRunAbortKeepsRecords(t *testing.T) {
	srv := openaitest.New(openaitest.Behavior{TokenDelay: 20 * time.Millisecond, Tokens: 1000})
	defer srv.Close()
	exp := newFakeExporter(t, "")
	cfg := testConfig(t, srv.BaseURL())
	cfg.Requests = 0
	cfg.Duration = time.Hour
	cfg.Exporters = []string{exp.URL}
	cfg.WarmupRequests = 0
	cfg.Workload.MeanOutputTokens, cfg.Workload.StddevOutputTokens = 1000, 0
	cfg.Timeouts.Drain = 100 * time.Millisecond // the stop's drain, then the requests are canceled
	eng := &fakeEngine{}
	opts := testOptions()
	opts.Engine = eng
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for len(exp.phases()) < 3 { // idle, startup, formal posted
			time.Sleep(5 * time.Millisecond)
		}
		time.Sleep(100 * time.Millisecond)
		cancel()
	}()
	res, err := Run(ctx, cfg, opts)
	if !errors.Is(err, ErrAborted) || res == nil {
		t.Fatalf("err %v res %v", err, res)
	}
	if res.Status != runarchive.StatusAborted || !slices.Contains(res.Flags, contract.FlagAborted) {
		t.Errorf("status %s flags %v", res.Status, res.Flags)
	}
	if _, st := eng.counts(); st != 1 {
		t.Errorf("engine stopped %d times", st)
	}
	if !exp.isEnded() {
		t.Error("run not ended on the exporter")
	}
	_, recs := readRecords(t, res.ArchiveDir)
	canceled := 0
	for _, r := range recs {
		if r.Phase == "formal" && r.ErrorClass == "canceled" {
			canceled++
		}
	}
	if len(recs) != 2 || canceled != 2 {
		t.Errorf("%d records, %d formal canceled (want the 2 in flight)", len(recs), canceled)
	}
	var man runarchive.Manifest
	readJSON(t, filepath.Join(res.ArchiveDir, runarchive.ManifestFile), &man)
	if man.Status != runarchive.StatusAborted {
		t.Errorf("manifest status %s", man.Status)
	}
}

func TestRunEngineNeverReady(t *testing.T) {
	srv := openaitest.New(openaitest.Behavior{NotReadyFor: time.Hour})
	defer srv.Close()
	exp := newFakeExporter(t, "")
	cfg := testConfig(t, srv.BaseURL())
	cfg.Engine.ReadyTimeout = 150 * time.Millisecond
	cfg.Exporters = []string{exp.URL}
	eng := &fakeEngine{}
	opts := testOptions()
	opts.Engine = eng
	res, err := Run(context.Background(), cfg, opts)
	if err == nil || !strings.Contains(err.Error(), "not ready") {
		t.Fatalf("err %v", err)
	}
	if res.Status != runarchive.StatusFailed || !slices.Contains(res.Flags, contract.FlagEngineNotReady) {
		t.Errorf("status %s flags %v", res.Status, res.Flags)
	}
	if _, st := eng.counts(); st != 1 || !exp.isEnded() {
		t.Errorf("engine stops %d, exporter ended %v", st, exp.isEnded())
	}
	if _, err := os.Stat(filepath.Join(res.ArchiveDir, runarchive.RequestsFile)); err != nil {
		t.Error(err)
	}
}

func TestRunWrongModel(t *testing.T) {
	t.Run("identity check", func(t *testing.T) {
		srv := openaitest.New(openaitest.Behavior{Model: "other-model"})
		defer srv.Close()
		cfg := testConfig(t, srv.BaseURL())
		res, err := runFake(cfg)
		if err == nil || !strings.Contains(err.Error(), `"other-model"`) || !slices.Contains(res.Flags, contract.FlagWrongModel) {
			t.Fatalf("err %v flags %v", err, res.Flags)
		}
		if srv.Requests() != 0 {
			t.Errorf("%d requests sent to the wrong model", srv.Requests())
		}
	})
	t.Run("answers as another model", func(t *testing.T) {
		srv := openaitest.New(openaitest.Behavior{AnswerModel: "impostor"})
		defer srv.Close()
		cfg := testConfig(t, srv.BaseURL())
		res, err := runFake(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if res.Summary.Errors["wrong_model"] != 10 {
			t.Errorf("errors %v", res.Summary.Errors)
		}
	})
}

func TestRunEngineProcessDies(t *testing.T) {
	srv := openaitest.New(openaitest.Behavior{TokenDelay: 10 * time.Millisecond, Tokens: 50})
	defer srv.Close()
	exp := newFakeExporter(t, "")
	cfg := testConfig(t, srv.BaseURL())
	cfg.Requests = 0
	cfg.Duration = time.Hour
	cfg.Exporters = []string{exp.URL}
	cfg.Engine.Cmd = "echo engine up; sleep 0.4; echo engine crashing >&2; exit 3"
	res, err := Run(context.Background(), cfg, testOptions())
	if err == nil || !strings.Contains(err.Error(), "exit status 3") {
		t.Fatalf("err %v", err)
	}
	if !slices.Contains(res.Flags, contract.FlagEngineExited) || res.Status != runarchive.StatusFailed {
		t.Errorf("status %s flags %v", res.Status, res.Flags)
	}
	logb, _ := os.ReadFile(filepath.Join(res.ArchiveDir, runarchive.EngineLogFile))
	if !strings.Contains(string(logb), "engine up") || !strings.Contains(string(logb), "engine crashing") {
		t.Errorf("engine.log %q", logb)
	}
	var man runarchive.Manifest
	readJSON(t, filepath.Join(res.ArchiveDir, runarchive.ManifestFile), &man)
	if !strings.Contains(man.Engine.ExitError, "exit status 3") || man.Engine.Controller != "process" {
		t.Errorf("manifest engine %+v", man.Engine)
	}
	if !exp.isEnded() {
		t.Error("exporter run not ended")
	}
}

func TestRunRemoteWriteDown(t *testing.T) {
	srv := openaitest.New(openaitest.Behavior{})
	defer srv.Close()
	rw := newRWReceiver(t)
	rw.failSamples = true
	cfg := testConfig(t, srv.BaseURL())
	cfg.RemoteWrite.URL = rw.URL
	cfg.RemoteWrite.FlushTimeout = 300 * time.Millisecond
	res, err := runFake(cfg)
	if err != nil {
		t.Fatalf("a Prometheus outage must not fail the run: %v", err)
	}
	if !slices.Contains(res.Flags, contract.FlagRemoteWriteLost) || res.RemoteWrite.Lost() == 0 || res.RemoteWrite.Acknowledged != 0 {
		t.Errorf("flags %v stats %+v", res.Flags, res.RemoteWrite)
	}
	if _, recs := readRecords(t, res.ArchiveDir); len(recs) != 12 {
		t.Errorf("%d records, want 12", len(recs))
	}
	var sb strings.Builder
	WriteSummary(&sb, res)
	if !strings.Contains(sb.String(), "0 acknowledged") || !strings.Contains(sb.String(), "lost") {
		t.Errorf("summary:\n%s", sb.String())
	}
}

func TestRunExporterUnreachableRefusedUpFront(t *testing.T) {
	srv := openaitest.New(openaitest.Behavior{})
	defer srv.Close()
	exp := newFakeExporter(t, "right")
	cfg := testConfig(t, srv.BaseURL())
	cfg.Exporters = []string{exp.URL}
	tok := filepath.Join(t.TempDir(), "tok")
	os.WriteFile(tok, []byte("wrong"), 0o600)
	cfg.ExporterTokenFile = tok
	_, err := runFake(cfg)
	if !phaseapi.IsStatus(err, 401) || strings.Contains(err.Error(), "wrong") {
		t.Fatalf("err %v", err)
	}
	if entries, _ := os.ReadDir(cfg.RunsDir); len(entries) != 0 {
		t.Errorf("a run directory was created: %v", entries)
	}
}

func TestRunNoLifecycle(t *testing.T) {
	srv := openaitest.New(openaitest.Behavior{})
	defer srv.Close()
	exp := newFakeExporter(t, "")
	cfg := testConfig(t, srv.BaseURL())
	cfg.Engine.NoLifecycle = true
	cfg.Exporters = []string{exp.URL}
	res, err := Run(context.Background(), cfg, testOptions())
	if err != nil {
		t.Fatal(err)
	}
	if got := exp.phases(); !equalPhases(got, []contract.Phase{contract.Formal}) || !exp.isEnded() {
		t.Errorf("phases %v ended %v", got, exp.isEnded())
	}
	if !slices.Contains(res.Flags, contract.FlagNoLifecycle) || res.Warmup.Started != 0 || res.Summary.Started != 10 {
		t.Errorf("flags %v warmup %d formal %d", res.Flags, res.Warmup.Started, res.Summary.Started)
	}
	// The run identity names the mode analyze reports it in.
	arch, err := runarchive.OpenDir(res.ArchiveDir)
	if err != nil {
		t.Fatal(err)
	}
	if m, err := arch.ReadManifest(); err != nil || m.RunInfo == nil || m.RunInfo.Mode != contract.ModeAttached {
		t.Errorf("manifest run_info %+v (%v), want mode attached", m.RunInfo, err)
	}
}

func TestRunReleaseNotClosed(t *testing.T) {
	srv := openaitest.New(openaitest.Behavior{})
	defer srv.Close()
	exp := newFakeExporter(t, "")
	exp.neverClose = true
	cfg := testConfig(t, srv.BaseURL())
	cfg.Exporters = []string{exp.URL}
	cfg.Engine.ReleaseWait = 100 * time.Millisecond
	res, err := runFake(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(res.Flags, contract.FlagReleaseWait) || !exp.isEnded() {
		t.Errorf("flags %v ended %v", res.Flags, exp.isEnded())
	}
}

func TestRunHooksAndEngineMetrics(t *testing.T) {
	srv := openaitest.New(openaitest.Behavior{TokenDelay: 5 * time.Millisecond})
	defer srv.Close()
	dir := t.TempDir()
	cfg := testConfig(t, srv.BaseURL())
	cfg.Engine.Start = "echo scaled up; touch " + filepath.Join(dir, "started")
	cfg.Engine.Stop = "echo scaled down; touch " + filepath.Join(dir, "stopped")
	cfg.Engine.Metrics = true
	cfg.Engine.MetricsInterval = 20 * time.Millisecond
	cfg.Requests = 30
	res, err := Run(context.Background(), cfg, testOptions())
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"started", "stopped"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("hook did not run: %v", err)
		}
	}
	logb, _ := os.ReadFile(filepath.Join(res.ArchiveDir, runarchive.EngineLogFile))
	if !strings.Contains(string(logb), "scaled up") || !strings.Contains(string(logb), "scaled down") {
		t.Errorf("engine.log %q", logb)
	}
	em, err := os.ReadFile(filepath.Join(res.ArchiveDir, runarchive.EngineMetricsFile))
	if err != nil || !strings.Contains(string(em), `"vllm:num_requests_running":2`) {
		t.Errorf("engine_metrics.jsonl %q %v", em, err)
	}
	var man runarchive.Manifest
	readJSON(t, filepath.Join(res.ArchiveDir, runarchive.ManifestFile), &man)
	if man.Engine.Controller != "hooks" || man.Engine.StartHook == "" {
		t.Errorf("manifest engine %+v", man.Engine)
	}
}

// TestEngineMetricsNaN: an engine answering NaN (or +Inf) for one metric
// has that metric left out of engine_metrics.jsonl, the others kept, the
// run flagged and the log warned (issue 33 medium 2: every line failed to
// encode and the file stayed empty, silently).
func TestEngineMetricsNaN(t *testing.T) {
	srv := openaitest.New(openaitest.Behavior{TokenDelay: 5 * time.Millisecond})
	defer srv.Close()
	engine := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		fmt.Fprint(w, "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{model_name=\"m\"} NaN\n"+
			"# TYPE vllm:num_requests_waiting gauge\nvllm:num_requests_waiting{model_name=\"m\"} 3\n"+
			"# TYPE vllm:num_preemptions_total counter\nvllm:num_preemptions_total{model_name=\"m\"} +Inf\n")
	}))
	defer engine.Close()
	cfg := testConfig(t, srv.BaseURL())
	cfg.Engine.Metrics = true
	cfg.Engine.MetricsURL = engine.URL + "/metrics"
	cfg.Engine.MetricsInterval = 20 * time.Millisecond
	cfg.Requests = 30
	var logs bytes.Buffer
	opts := testOptions()
	opts.Engine = &fakeEngine{}
	opts.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	res, err := Run(context.Background(), cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	em, err := os.ReadFile(filepath.Join(res.ArchiveDir, runarchive.EngineMetricsFile))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(em)), "\n")
	var line EngineMetricsLine
	if err := json.Unmarshal([]byte(lines[0]), &line); err != nil || len(lines) < 2 {
		t.Fatalf("engine_metrics.jsonl %q: %v", em, err)
	}
	if line.Metrics["vllm:num_requests_waiting"] != 3 || len(line.Metrics) != 1 ||
		!slices.Equal(line.Invalid, []string{"vllm:num_preemptions_total", "vllm:num_requests_running"}) {
		t.Errorf("line %+v: want waiting 3 kept, running and preemptions named invalid", line)
	}
	if !slices.Contains(res.Flags, contract.FlagEngineMetricsInvalid) {
		t.Errorf("flags %v: want %s", res.Flags, contract.FlagEngineMetricsInvalid)
	}
	if !strings.Contains(logs.String(), "metric=vllm:num_requests_running") {
		t.Errorf("log lacks the warning naming the metric:\n%s", logs.String())
	}
}

func TestRunEngineDiesDuringStartup(t *testing.T) {
	srv := openaitest.New(openaitest.Behavior{NotReadyFor: time.Hour})
	defer srv.Close()
	cfg := testConfig(t, srv.BaseURL())
	cfg.Engine.Cmd = "echo 'CUDA out of memory' >&2; exit 1"
	cfg.Engine.ReadyTimeout = time.Minute
	t0 := time.Now()
	res, err := Run(context.Background(), cfg, testOptions())
	if err == nil || !strings.Contains(err.Error(), "engine exited") || !strings.Contains(err.Error(), "exit status 1") {
		t.Fatalf("err %v", err)
	}
	if time.Since(t0) > 10*time.Second {
		t.Errorf("took %s: a dead engine must not wait out the ready timeout", time.Since(t0))
	}
	if !slices.Contains(res.Flags, contract.FlagEngineExited) || slices.Contains(res.Flags, contract.FlagEngineNotReady) {
		t.Errorf("flags %v", res.Flags)
	}
	logb, _ := os.ReadFile(filepath.Join(res.ArchiveDir, runarchive.EngineLogFile))
	if !strings.Contains(string(logb), "CUDA out of memory") {
		t.Errorf("engine.log %q", logb)
	}
}

func TestRunRemoteWriteAuthAndHeaders(t *testing.T) {
	srv := openaitest.New(openaitest.Behavior{})
	defer srv.Close()
	rw := newRWReceiver(t)
	dir := t.TempDir()
	tok := filepath.Join(dir, "rw-token")
	os.WriteFile(tok, []byte("rw-secret-9"), 0o600)
	cfg := testConfig(t, srv.BaseURL())
	cfg.RemoteWrite.URL = rw.URL
	cfg.RemoteWrite.HTTP = config.DefaultHTTPClientConfig
	cfg.RemoteWrite.HTTP.Authorization = &config.Authorization{Type: "Bearer", CredentialsFile: tok}
	cfg.RemoteWrite.HTTP.HTTPHeaders = &config.Headers{Headers: map[string]config.Header{"X-Scope-OrgID": {Values: []string{"team-a"}}}}
	res, err := runFake(cfg)
	if err != nil {
		t.Fatal(err)
	}
	rw.mu.Lock()
	h := rw.headers
	rw.mu.Unlock()
	if h.Get("Authorization") != "Bearer rw-secret-9" || h.Get("X-Scope-OrgID") != "team-a" || h.Get("Content-Encoding") != "snappy" {
		t.Errorf("remote-write headers %v", h)
	}
	entries, _ := os.ReadDir(res.ArchiveDir)
	for _, e := range entries {
		b, _ := os.ReadFile(filepath.Join(res.ArchiveDir, e.Name()))
		if strings.Contains(string(b), "rw-secret-9") {
			t.Errorf("%s holds the remote-write token", e.Name())
		}
	}
}

func TestRunExporterFailsMidRun(t *testing.T) {
	srv := openaitest.New(openaitest.Behavior{})
	defer srv.Close()
	good, bad := newFakeExporter(t, ""), newFakeExporter(t, "")
	bad.failAfter = 2 // idle and startup, then 500s
	cfg := testConfig(t, srv.BaseURL())
	cfg.Exporters = []string{good.URL, bad.URL}
	cfg.Engine.ReleaseWait = 200 * time.Millisecond
	res, err := runFake(cfg)
	if err != nil {
		t.Fatalf("an exporter failing mid-run must not lose the run: %v", err)
	}
	if !slices.Contains(res.Flags, contract.FlagExporterError) || !slices.Contains(res.Flags, contract.FlagExporterLostPhases) || res.Summary.Succeeded != 10 {
		t.Errorf("flags %v summary %+v, want exporter_error and exporter_lost_phases", res.Flags, res.Summary)
	}
	if why := res.Unusable(); len(why) == 0 {
		t.Error("a run whose exporter lost phases counts as usable")
	}
	if got := good.phases(); len(got) != 5 {
		t.Errorf("the healthy exporter got %v", got)
	}
	ph := readPhases(t, res.ArchiveDir)
	if len(ph.Exporters) != 2 || ph.Exporters[0].Status == nil {
		t.Errorf("phases.json %+v", ph)
	}
}

// TestRunExporterBlipRetried: phase POSTs answered 503 for a while (an
// exporter restarting) are retried with backoff and get through; nothing
// is flagged.
func TestRunExporterBlipRetried(t *testing.T) {
	srv := openaitest.New(openaitest.Behavior{})
	defer srv.Close()
	exp := newFakeExporter(t, "")
	exp.blips = 2
	cfg := testConfig(t, srv.BaseURL())
	cfg.Exporters = []string{exp.URL}
	res, err := runFake(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if got := exp.phases(); len(got) != 5 || got[0] != contract.Idle {
		t.Errorf("exporter got phases %v, want all 5 (idle retried)", got)
	}
	if len(flagsBesidesLoad(res.Flags)) != 0 || len(res.Unusable()) != 0 {
		t.Errorf("flags %v, unusable %v; want none", res.Flags, res.Unusable())
	}
}

// TestRunLostPhasesFlagged: a final status lacking a posted phase (the
// exporter restarted without its state) flags exporter_lost_phases and
// makes the run unusable.
func TestRunLostPhasesFlagged(t *testing.T) {
	srv := openaitest.New(openaitest.Behavior{})
	defer srv.Close()
	exp := newFakeExporter(t, "")
	exp.forget = 2 // the final status shows only the last phases
	cfg := testConfig(t, srv.BaseURL())
	cfg.Exporters = []string{exp.URL}
	res, err := runFake(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(res.Flags, contract.FlagExporterLostPhases) || len(res.Unusable()) == 0 {
		t.Errorf("flags %v, unusable %v; want exporter_lost_phases, unusable", res.Flags, res.Unusable())
	}
	var sb strings.Builder
	if err := WriteSummary(&sb, res); err != nil || !strings.Contains(sb.String(), "unusable") {
		t.Errorf("summary lacks the unusable line:\n%s", sb.String())
	}
}

// TestRunPreflightRefusals: a dead remote-write target and a run id an
// exporter saw before are refused before any run directory exists, each
// in one line naming what and where.
func TestRunPreflightRefusals(t *testing.T) {
	srv := openaitest.New(openaitest.Behavior{})
	defer srv.Close()
	rw := newRWReceiver(t)
	rw.fail = true
	exp := newFakeExporter(t, "")
	exp.used = map[string]bool{"taken": true}
	cfg := testConfig(t, srv.BaseURL())
	cfg.RemoteWrite.URL = rw.URL
	cfg.Exporters = []string{exp.URL}
	cfg.RunID = "taken"
	_, err := runFake(cfg)
	if !errors.Is(err, ErrPreflight) {
		t.Fatalf("err %v, want a pre-flight failure", err)
	}
	for _, want := range []string{"remote-write target " + rw.URL + ": empty write: answered 503", "exporter " + exp.URL + ": run ID taken was used before"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("pre-flight error lacks %q:\n%v", want, err)
		}
	}
	if entries, _ := os.ReadDir(cfg.RunsDir); len(entries) != 0 {
		t.Errorf("a run directory was created: %v", entries)
	}
	if len(exp.phases()) != 0 {
		t.Errorf("phases posted after a failed pre-flight: %v", exp.phases())
	}
}

// fullDisk is a requests file on a full disk: every write fails.
type fullDisk struct{}

func (fullDisk) Write([]byte) (int, error) { return 0, syscall.ENOSPC }

// TestArchiveWriteFailureStopsLoad: the first write error of the run
// archive stops the load at once, the run ends failed with an error saying
// the archive could not be written (issue 33 medium 3: the load ran to its
// end, the manifest stayed running).
func TestArchiveWriteFailureStopsLoad(t *testing.T) {
	srv := openaitest.New(openaitest.Behavior{TokenDelay: 2 * time.Millisecond})
	defer srv.Close()
	cfg := testConfig(t, srv.BaseURL())
	cfg.Requests = 3000
	opts := testOptions()
	opts.Engine = &fakeEngine{}
	opts.wrapRequests = func(io.Writer) io.Writer { return fullDisk{} }
	res, err := Run(context.Background(), cfg, opts)
	if !errors.Is(err, ErrArchiveWrite) || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("Run: %v; want ErrArchiveWrite wrapping ENOSPC", err)
	}
	if res.Status != runarchive.StatusFailed || res.Summary.Started >= cfg.Requests {
		t.Errorf("status %s, %d of %d formal requests started: want failed, the load stopped", res.Status, res.Summary.Started, cfg.Requests)
	}
	var man runarchive.Manifest
	readJSON(t, filepath.Join(res.ArchiveDir, runarchive.ManifestFile), &man)
	if man.Status != runarchive.StatusFailed || !strings.Contains(man.Error, "could not be written") {
		t.Errorf("manifest status %s error %q: want failed, the archive named", man.Status, man.Error)
	}
}
