package benchjob

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestEngineGroupDiesWithBench: SIGKILL of the process that launched an
// --engine-cmd engine kills the engine's whole process group (grandchildren
// included) through Pdeathsig.
func TestEngineGroupDiesWithBench(t *testing.T) {
	if os.Getenv("JOULEMARK_TEST_ENGINE_HELPER") == "1" {
		engineHelper()
		return
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestEngineGroupDiesWithBench$")
	cmd.Env = append(os.Environ(), "JOULEMARK_TEST_ENGINE_HELPER=1", "JOULEMARK_TEST_ENGINE_DIR="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		_ = cmd.Process.Kill()
		t.Fatalf("helper: %v", err)
	}
	pgid, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "pgid ")))
	if err != nil {
		_ = cmd.Process.Kill()
		t.Fatalf("helper said %q", line)
	}
	t.Cleanup(func() { _ = syscall.Kill(-pgid, syscall.SIGKILL) })
	waitUntil(t, 5*time.Second, "the engine group's grandchild", func() bool { return countGroup(pgid) >= 3 })
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	waitUntil(t, 10*time.Second, "the engine group to die with its bench", func() bool { return !groupAlive(pgid) })
	// The pid file is left (the bench could not remove it); reaping it
	// finds nothing alive and removes it.
	if killed, err := ReapEngine(dir); err != nil || killed {
		t.Errorf("reaping after the group died: killed %v, %v", killed, err)
	}
	if _, err := os.Stat(filepath.Join(dir, EnginePIDFile)); !os.IsNotExist(err) {
		t.Errorf("pid file left after reaping: %v", err)
	}
}

// engineHelper is the "bench" TestEngineGroupDiesWithBench kills: it
// starts an engine whose group has a child and a grandchild, says the
// group, and waits to be killed.
func engineHelper() {
	dir := os.Getenv("JOULEMARK_TEST_ENGINE_DIR")
	e := NewProcessEngine("sh -c 'sleep 300 & sleep 300'", time.Second)
	e.PIDFile = filepath.Join(dir, EnginePIDFile)
	if err := e.Start(context.Background()); err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	fmt.Printf("pgid %d\n", e.cmd.Process.Pid)
	time.Sleep(time.Minute)
	os.Exit(2)
}

// TestReapEngine: an engine group recorded by a bench that is gone is
// killed; one whose bench still runs, or whose leader pid was recycled, is
// not.
func TestReapEngine(t *testing.T) {
	start := func() int {
		c := exec.Command("sh", "-c", "sleep 300 & sleep 300")
		c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		go func() { _ = c.Wait() }()
		t.Cleanup(func() { _ = syscall.Kill(-c.Process.Pid, syscall.SIGKILL) })
		return c.Process.Pid
	}
	write := func(dir string, p enginePID) {
		b, _ := json.Marshal(p)
		if err := os.WriteFile(filepath.Join(dir, EnginePIDFile), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// a dead bench: pid 0x7ffffffe does not run
	const deadBench = 0x7ffffffe
	runs := t.TempDir()
	orphan, owned, recycled := filepath.Join(runs, "orphan"), filepath.Join(runs, "owned"), filepath.Join(runs, "recycled")
	for _, d := range []string{orphan, owned, recycled} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	g1, g2, g3 := start(), start(), start()
	waitUntil(t, 5*time.Second, "the test groups", func() bool { return countGroup(g1) >= 2 && countGroup(g2) >= 2 && countGroup(g3) >= 2 })
	write(orphan, enginePID{PGID: g1, StartTicks: startTicks(g1), BenchPID: deadBench})
	parent := os.Getppid() // a live process that is not this one
	write(owned, enginePID{PGID: g2, StartTicks: startTicks(g2), BenchPID: parent, BenchStartTicks: startTicks(parent)})
	write(recycled, enginePID{PGID: g3, StartTicks: startTicks(g3) + 1, BenchPID: deadBench})

	ids, err := ReapOrphanEngines(runs)
	if err != nil || len(ids) != 1 || ids[0] != "orphan" {
		t.Fatalf("reaped %v, %v; want [orphan]", ids, err)
	}
	if groupAlive(g1) {
		t.Error("the orphan's group survived")
	}
	if !groupAlive(g2) || !groupAlive(g3) {
		t.Error("a group with a live bench or a recycled leader pid was killed")
	}
	if _, err := os.Stat(filepath.Join(owned, EnginePIDFile)); err != nil {
		t.Errorf("the pid file of a live bench's engine went: %v", err)
	}
}

func countGroup(pgid int) int {
	n := 0
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if g, err := syscall.Getpgid(pid); err == nil && g == pgid {
			n++
		}
	}
	return n
}

func waitUntil(t *testing.T, d time.Duration, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
