package benchjob

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/joulemark/joulemark/internal/atomicfile"
	"github.com/joulemark/joulemark/internal/runarchive"
)

// EnginePIDFile is runs/<run_id>/engine.pid: the process group of the
// engine an --engine-cmd run launched, while it may be alive.
const EnginePIDFile = "engine.pid"

// groupScript wraps the engine command for sh -c: the engine runs in the
// background of a shell that leads its process group; SIGHUP (the bench's
// death, through Pdeathsig) kills the whole group; SIGTERM and SIGINT (a
// stop) reach every member and the shell waits until the engine is gone,
// then exits with its status. Its traps are set before the engine starts
// (the engine's subshell gets the default actions back), so a stop that
// comes as soon as the engine runs never kills the shell alone.
func groupScript(cmd string) string {
	return "trap 'kill -KILL 0' HUP\ntrap : TERM INT\n{\n" + cmd + "\n} &\np=$!\n" +
		"while :; do wait $p; s=$?; kill -0 $p 2>/dev/null || exit $s; done\n"
}

// processGroupAttr puts the child in its own process group and, on Linux,
// sends it SIGHUP when the bench dies.
func processGroupAttr() *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{Setpgid: true}
	setPdeathsig(a, syscall.SIGHUP)
	return a
}

// startLocked starts c from a locked OS thread: Pdeathsig fires when the
// thread that forked the child ends, and the Go runtime only ends threads
// locked by a goroutine that exits without unlocking, which this goroutine
// never does; locking keeps the fork on a thread that lives with the
// process.
func startLocked(c *exec.Cmd) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	return c.Start()
}

// enginePID is the content of EnginePIDFile.
type enginePID struct {
	// PGID is the engine's process group (its shell's pid).
	PGID int `json:"pgid"`
	// StartTicks is the group leader's start time (/proc/<pid>/stat field
	// 22): a recycled pid has another one and is never killed.
	StartTicks uint64 `json:"start_ticks"`
	// BenchPID and BenchStartTicks identify the bench that owns the
	// engine: while it lives, the engine is not an orphan.
	BenchPID        int    `json:"bench_pid"`
	BenchStartTicks uint64 `json:"bench_start_ticks"`
	Cmd             string `json:"cmd"`
}

func writeEnginePID(path string, pgid int, cmd string) error {
	return writeEnginePIDDoc(path, enginePID{PGID: pgid, StartTicks: startTicks(pgid), BenchPID: os.Getpid(),
		BenchStartTicks: startTicks(os.Getpid()), Cmd: cmd})
}

func writeEnginePIDDoc(path string, p enginePID) error {
	b, err := json.Marshal(p)
	if err != nil {
		return err
	}
	if err := atomicfile.WriteFile(path, append(b, '\n')); err != nil {
		return fmt.Errorf("engine pid file: %w", err)
	}
	return nil
}

// startTicks is process pid's start time in clock ticks since boot, 0
// where unknown (no /proc).
func startTicks(pid int) uint64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	// comm (field 2) may hold spaces and parentheses: fields count from
	// the last ')'.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return 0
	}
	v, _ := strconv.ParseUint(f[19], 10, 64)
	return v
}

// same reports whether pid is still the process that started at ticks.
func same(pid int, ticks uint64) bool {
	if pid <= 0 || syscall.Kill(pid, 0) != nil {
		return false
	}
	return ticks == 0 || startTicks(pid) == ticks
}

// benchProcess identifies this process as a run's bench.
func benchProcess() *runarchive.BenchProcess {
	h, _ := os.Hostname()
	return &runarchive.BenchProcess{PID: os.Getpid(), StartTicks: startTicks(os.Getpid()), Hostname: h}
}

// ErrBenchAlive is wrapped when runs finalize finds the run's bench alive.
var ErrBenchAlive = errors.New("the run's bench is still running")

// checkBenchGone fails with ErrBenchAlive, naming the pid and where it was
// found, while the bench of the run in runDir (manifest m) lives on this
// host: the run's end is its own. A bench on another host cannot be
// checked and is taken as gone; so is this very process.
func checkBenchGone(runDir string, m *runarchive.Manifest) error {
	host, _ := os.Hostname()
	if b := m.Bench; b != nil && b.Hostname == host && b.PID != os.Getpid() && same(b.PID, b.StartTicks) {
		return fmt.Errorf("%w: pid %d (manifest.json bench, started at tick %d): stop it (Ctrl-C ends the run and its archive) or wait for it; finalize is for a bench that died", ErrBenchAlive, b.PID, b.StartTicks)
	}
	var p enginePID
	if b, err := os.ReadFile(filepath.Join(runDir, EnginePIDFile)); err == nil && json.Unmarshal(b, &p) == nil &&
		p.BenchPID != os.Getpid() && same(p.BenchPID, p.BenchStartTicks) {
		return fmt.Errorf("%w: pid %d (%s): stop it (Ctrl-C ends the run and its archive) or wait for it; finalize is for a bench that died", ErrBenchAlive, p.BenchPID, EnginePIDFile)
	}
	return nil
}

// groupAlive reports whether process group pgid has a member.
func groupAlive(pgid int) bool { return syscall.Kill(-pgid, 0) == nil }

// ReapEngine kills the engine process group recorded in a run directory's
// EnginePIDFile when the bench that launched it is gone and the group's
// leader is still the process that was launched; the file is then removed.
// It reports whether a group was killed. A file whose bench still runs is
// left alone.
func ReapEngine(runDir string) (bool, error) {
	path := filepath.Join(runDir, EnginePIDFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("reading %s: %w", path, err)
	}
	var p enginePID
	if err := json.Unmarshal(b, &p); err != nil || p.PGID <= 1 {
		return false, fmt.Errorf("reading %s: not an engine pid file", path)
	}
	if p.BenchPID != os.Getpid() && same(p.BenchPID, p.BenchStartTicks) {
		return false, nil // its bench still runs
	}
	killed := false
	if groupAlive(p.PGID) && (p.StartTicks == 0 || !same(p.PGID, 0) || same(p.PGID, p.StartTicks)) {
		if err := syscall.Kill(-p.PGID, syscall.SIGKILL); err == nil {
			killed = true
			for i := 0; i < 100 && groupAlive(p.PGID); i++ {
				time.Sleep(20 * time.Millisecond)
			}
		}
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return killed, fmt.Errorf("removing %s: %w", path, err)
	}
	return killed, nil
}

// ReapOrphanEngines reaps (ReapEngine) every run directory under runsDir
// that holds an engine pid file, and returns the run ids whose engine was
// killed.
func ReapOrphanEngines(runsDir string) ([]string, error) {
	files, err := filepath.Glob(filepath.Join(runsDir, "*", EnginePIDFile))
	if err != nil {
		return nil, err
	}
	var ids []string
	var errs []error
	for _, f := range files {
		dir := filepath.Dir(f)
		killed, err := ReapEngine(dir)
		if err != nil {
			errs = append(errs, err)
		}
		if killed {
			ids = append(ids, filepath.Base(dir))
		}
	}
	return ids, errors.Join(errs...)
}
