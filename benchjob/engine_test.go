package benchjob

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/joulemark/joulemark/internal/testkit/testnet"
)

func TestProcessEngineSIGTERM(t *testing.T) {
	dir := t.TempDir()
	marker := filepath.Join(dir, "term")
	e := NewProcessEngine("trap 'echo got TERM; touch "+marker+"; exit 0' TERM; echo started; while true; do sleep 0.05; done", 5*time.Second)
	var logs testnet.SyncBuffer
	e.CaptureLogs(&logs)
	if err := e.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return strings.Contains(logs.String(), "started") })
	t0 := time.Now()
	if err := e.Stop(context.Background()); err != nil {
		t.Fatalf("stop: %v", err)
	}
	if time.Since(t0) > 3*time.Second {
		t.Errorf("stop took %s: SIGTERM should have been enough", time.Since(t0))
	}
	if _, err := os.Stat(marker); err != nil || !strings.Contains(logs.String(), "got TERM") {
		t.Errorf("no SIGTERM handling seen: %v, logs %q", err, logs.String())
	}
	select {
	case <-e.Exited():
	default:
		t.Error("Exited not closed")
	}
}

func TestProcessEngineSIGKILLAfterGrace(t *testing.T) {
	e := NewProcessEngine("trap '' TERM; echo stubborn; while true; do sleep 0.05; done", 200*time.Millisecond)
	var logs testnet.SyncBuffer
	e.CaptureLogs(&logs)
	if err := e.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return strings.Contains(logs.String(), "stubborn") })
	err := e.Stop(context.Background())
	if err == nil || !strings.Contains(err.Error(), "killed") {
		t.Fatalf("stop: %v", err)
	}
	if ee := e.ExitErr(); ee == nil || !strings.Contains(ee.Error(), "killed") {
		t.Errorf("exit error %v", ee)
	}
}

func TestHookEngine(t *testing.T) {
	dir := t.TempDir()
	h := &HookEngine{StartCmd: "echo up > " + filepath.Join(dir, "state"), StopCmd: "echo down > " + filepath.Join(dir, "state") + "; echo stopped"}
	var logs testnet.SyncBuffer
	h.CaptureLogs(&logs)
	if err := h.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "state")); string(b) != "up\n" {
		t.Errorf("state after start %q", b)
	}
	if err := h.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "state")); string(b) != "down\n" || !strings.Contains(logs.String(), "stopped") {
		t.Errorf("state after stop %q, logs %q", b, logs.String())
	}
	bad := &HookEngine{StartCmd: "exit 7", StopCmd: "true"}
	if err := bad.Start(context.Background()); err == nil || !strings.Contains(err.Error(), "exit status 7") {
		t.Errorf("failing hook: %v", err)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in 5s")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestParseEngineMetrics(t *testing.T) {
	in := `# HELP vllm:num_requests_running Running.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{model_name="a"} 3
vllm:num_requests_running{model_name="b"} 2
# TYPE vllm:num_preemptions_total counter
vllm:num_preemptions_total{model_name="a"} 7
# TYPE sglang:num_queue_reqs gauge
sglang:num_queue_reqs 4
# TYPE python_gc_objects_collected_total counter
python_gc_objects_collected_total{generation="0"} 100
`
	m, _, err := parseEngineMetrics(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if len(m) != 3 || m["vllm:num_requests_running"] != 5 || m["vllm:num_preemptions_total"] != 7 || m["sglang:num_queue_reqs"] != 4 {
		t.Errorf("metrics %v", m)
	}
	if _, _, err := parseEngineMetrics(strings.NewReader("vllm:x{ 1\n")); err == nil {
		t.Error("malformed exposition accepted")
	}
}
