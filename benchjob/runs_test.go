package benchjob

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/joulemark/joulemark/benchjob/openai/openaitest"
	"github.com/joulemark/joulemark/internal/contract"
	"github.com/joulemark/joulemark/internal/phaseapi"
	"github.com/joulemark/joulemark/internal/remotewrite"
	"github.com/joulemark/joulemark/internal/runarchive"
)

// TestFinalizeKilledRun: a run whose bench died mid-run (manifest running,
// requests.jsonl.partial, engine group alive, exporter run active) is
// finalized: engine group killed, archive final with status killed and
// every record, exporter run ended.
func TestFinalizeKilledRun(t *testing.T) {
	runs := t.TempDir()
	run, err := runarchive.Create(runs, "killed-1")
	if err != nil {
		t.Fatal(err)
	}
	exp := newFakeExporter(t, "")
	man := &runarchive.Manifest{RunID: "killed-1", Status: runarchive.StatusRunning, Created: 1,
		GPUs: map[string][]phaseapi.GPUInfo{exp.URL: nil}, Phases: map[string]float64{}}
	if err := run.WriteManifest(man); err != nil {
		t.Fatal(err)
	}
	f, err := run.CreatePartial(runarchive.RequestsFile)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"phase":"formal","slot":0,"send_time":10,"end_time":11,"latency_seconds":1,"output_tokens":5,"success":true}` + "\n")
	f.WriteString(`{"phase":"formal","slot":1,"send_t`) // torn by the kill
	f.Close()
	c := exec.Command("sh", "-c", "sleep 300 & sleep 300")
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = c.Wait() }()
	pgid := c.Process.Pid
	t.Cleanup(func() { _ = syscall.Kill(-pgid, syscall.SIGKILL) })
	p := enginePID{PGID: pgid, StartTicks: startTicks(pgid), BenchPID: 0x7ffffffe}
	if err := writeEnginePIDDoc(run.Path(EnginePIDFile), p); err != nil {
		t.Fatal(err)
	}
	if _, err := exp.Client().Post(exp.URL+"/api/v1/runs/killed-1/phases/idle", "", nil); err != nil {
		t.Fatal(err)
	}

	res, err := Finalize(context.Background(), runs, "killed-1", nil, func(u string) (*phaseapi.Client, error) { return phaseapi.NewClient(u, "", nil) })
	if err != nil {
		t.Fatal(err)
	}
	if !res.EngineKilled || groupAlive(pgid) {
		t.Errorf("engine killed %v, group alive %v", res.EngineKilled, groupAlive(pgid))
	}
	if res.Manifest.Status != runarchive.StatusKilled || !exp.isEnded() || res.Exporters[exp.URL] == nil {
		t.Errorf("status %s, exporter ended %v, %v", res.Manifest.Status, exp.isEnded(), res.ExporterErrors)
	}
	n := 0
	err = run.EachRequest(func(int, *runarchive.Request) error { n++; return nil })
	if err != nil || n != 1 {
		t.Errorf("records after finalize: %d, %v; want the 1 complete line", n, err)
	}
	if _, err := Finalize(context.Background(), runs, "killed-1", nil, nil); err == nil {
		t.Error("finalizing a final run again succeeded")
	}
}

// TestPushResendsIdempotently: runs push sends every per-request sample of
// the archive with its original timestamp (the ones the run pushed), plus
// the aggregates; a second push sends the very same samples.
func TestPushResendsIdempotently(t *testing.T) {
	srv := openaitest.New(openaitest.Behavior{})
	defer srv.Close()
	live := newRWReceiver(t)
	cfg := testConfig(t, srv.BaseURL())
	cfg.RemoteWrite.URL = live.URL
	res, err := runFake(cfg)
	if err != nil {
		t.Fatal(err)
	}
	pushed := newRWReceiver(t)
	for range 2 {
		pr, err := Push(context.Background(), cfg.RunsDir, res.RunID, remotewrite.Config{URL: pushed.URL}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if pr.Requests != 12 || pr.Stats.Acknowledged != int64(pr.Samples) || pr.Stats.Lost() != 0 {
			t.Errorf("push: %+v", pr)
		}
	}
	perRequest := func(rw *rwReceiver) []string {
		var out []string
		for _, name := range []string{contract.RequestOutputTokens, contract.RequestInputTokens, contract.RequestTTFT, contract.RequestLatency, contract.RequestSuccess} {
			for _, s := range rw.named(name) {
				out = append(out, name+s.labels["slot"]+s.labels["phase"]+time.UnixMilli(s.ts).UTC().Format(time.RFC3339Nano)+strconv.FormatFloat(s.value, 'g', -1, 64))
			}
		}
		slices.Sort(out)
		return out
	}
	want, got := perRequest(live), perRequest(pushed)
	twice := append(slices.Clone(want), want...)
	slices.Sort(twice)
	if len(want) == 0 || !slices.Equal(got, twice) {
		for i := range min(len(got), len(twice)) {
			if got[i] != twice[i] {
				t.Errorf("first difference: pushed %s, live %s", got[i], twice[i])
				break
			}
		}
		t.Errorf("pushed per-request samples (twice) differ from the live ones: got %d, want 2×%d", len(got), len(want))
	}
	if len(pushed.named(contract.BenchRequests)) == 0 {
		t.Error("no aggregates pushed")
	}
	// Every pushed sample, aggregates and run identity included, is one the
	// run pushed itself: same series, timestamp and value. Sent to a server
	// that got the run's samples, the push is all duplicates.
	key := func(s rwSample) string {
		return fmt.Sprint(s.labels, s.ts)
	}
	liveAt := map[string]float64{}
	for _, s := range live.all() {
		liveAt[key(s)] = s.value
	}
	names := map[string]bool{}
	for _, s := range pushed.all() {
		names[s.labels["__name__"]] = true
		if v, ok := liveAt[key(s)]; !ok || v != s.value {
			t.Errorf("pushed %s = %v; the run pushed %v (present %v)", key(s), s.value, v, ok)
		}
	}
	for _, n := range []string{contract.RequestLatency, contract.BenchRequests, contract.BenchLatency + "_sum", contract.BenchAchievedRate, contract.BenchTargetRate, contract.BenchInFlight, contract.RunInfo} {
		if !names[n] {
			t.Errorf("push sent no %s", n)
		}
	}
	if _, err := os.Stat(filepath.Join(cfg.RunsDir, res.RunID, runarchive.RequestsFile)); err != nil {
		t.Fatal(err)
	}
}

// TestFinalizeRefusesLiveBench: while the run's bench process lives
// (manifest.json's bench, or engine.pid's bench_pid), runs finalize
// refuses, naming the pid and where it was found, and changes nothing;
// once the bench is gone it finalizes.
func TestFinalizeRefusesLiveBench(t *testing.T) {
	bench := exec.Command("sleep", "300")
	if err := bench.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = bench.Wait(); close(done) }()
	t.Cleanup(func() { _ = bench.Process.Kill() })
	pid := bench.Process.Pid
	host, _ := os.Hostname()
	for _, where := range []string{"manifest.json", EnginePIDFile} {
		runs := t.TempDir()
		run, err := runarchive.Create(runs, "live-1")
		if err != nil {
			t.Fatal(err)
		}
		man := &runarchive.Manifest{RunID: "live-1", Status: runarchive.StatusRunning, Created: 1, Phases: map[string]float64{}}
		if where == "manifest.json" {
			man.Bench = &runarchive.BenchProcess{PID: pid, StartTicks: startTicks(pid), Hostname: host}
		} else if err := writeEnginePIDDoc(run.Path(EnginePIDFile), enginePID{PGID: 0x7ffffffe, BenchPID: pid, BenchStartTicks: startTicks(pid)}); err != nil {
			t.Fatal(err)
		}
		if err := run.WriteManifest(man); err != nil {
			t.Fatal(err)
		}
		f, err := run.CreatePartial(runarchive.RequestsFile)
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
		_, err = Finalize(context.Background(), runs, "live-1", nil, nil)
		if !errors.Is(err, ErrBenchAlive) || !strings.Contains(err.Error(), fmt.Sprintf("pid %d (%s", pid, where)) {
			t.Fatalf("Finalize with the bench alive (%s) = %v, want ErrBenchAlive naming pid %d and %s", where, err, pid, where)
		}
		if m, _ := run.ReadManifest(); m.Status != runarchive.StatusRunning {
			t.Errorf("status %s after the refusal, want it untouched", m.Status)
		}
	}
	_ = bench.Process.Kill()
	<-done
	runs := t.TempDir()
	run, _ := runarchive.Create(runs, "dead-1")
	man := &runarchive.Manifest{RunID: "dead-1", Status: runarchive.StatusRunning, Created: 1, Phases: map[string]float64{},
		Bench: &runarchive.BenchProcess{PID: pid, StartTicks: startTicks(pid), Hostname: host}}
	if err := run.WriteManifest(man); err != nil {
		t.Fatal(err)
	}
	if _, err := Finalize(context.Background(), runs, "dead-1", nil, nil); errors.Is(err, ErrBenchAlive) {
		t.Errorf("Finalize after the bench died = %v", err)
	}
}

// TestPushSkipsImplausibleRequests: archived requests with an impossible
// time or a negative count are left out, named by line, and the rest
// pushed (issue 33 medium 12: one such sample had the receiver refuse
// every batch and all samples were lost).
func TestPushSkipsImplausibleRequests(t *testing.T) {
	srv := openaitest.New(openaitest.Behavior{})
	defer srv.Close()
	cfg := testConfig(t, srv.BaseURL())
	res, err := runFake(cfg)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(res.ArchiveDir, runarchive.RequestsFile)
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	for line, set := range map[int]func(map[string]any){
		3: func(r map[string]any) { r["end_time"] = -5 },
		5: func(r map[string]any) { r["end_time"] = 1e300 },
		7: func(r map[string]any) { r["output_tokens"] = -1 },
	} {
		var r map[string]any
		if err := json.Unmarshal([]byte(lines[line-1]), &r); err != nil {
			t.Fatal(err)
		}
		set(r)
		nb, _ := json.Marshal(r)
		lines[line-1] = string(nb)
	}
	if err := os.WriteFile(file, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	pushed := newRWReceiver(t)
	var logs bytes.Buffer
	pr, err := Push(context.Background(), cfg.RunsDir, res.RunID, remotewrite.Config{URL: pushed.URL}, slogTo(&logs))
	if err != nil {
		t.Fatal(err)
	}
	var skipped []int
	for _, s := range pr.Skipped {
		skipped = append(skipped, s.Line)
	}
	if !slices.Equal(skipped, []int{3, 5, 7}) || pr.Requests != len(lines)-3 || pr.Stats.Lost() != 0 || pr.Stats.Acknowledged != int64(pr.Samples) {
		t.Errorf("push %+v: want lines 3, 5, 7 skipped, the other %d pushed, none lost", pr, len(lines)-3)
	}
	if !strings.Contains(logs.String(), "line=5") || !strings.Contains(pr.Skipped[2].Why, "output_tokens -1") {
		t.Errorf("skipped %+v, log:\n%s", pr.Skipped, logs.String())
	}
}
