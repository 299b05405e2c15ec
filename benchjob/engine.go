package benchjob

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// Engine starts and stops the inference engine under test. Start returns
// once the engine was launched (readiness is polled by the run); Stop
// returns once it is down.
type Engine interface {
	Start(ctx context.Context) error
	Stop(ctx context.Context) error
}

// LogCapturer is an Engine whose output the run captures into the archive
// (engine.log). CaptureLogs is called before Start.
type LogCapturer interface {
	CaptureLogs(w io.Writer)
}

// Watcher is an Engine that can tell when it died: Exited is closed then,
// and ExitErr says how.
type Watcher interface {
	Exited() <-chan struct{}
	ExitErr() error
}

// ProcessEngine launches and owns an engine process (sh -c Cmd in its own
// process group). Stop sends SIGTERM to the group, waits Grace, then sends
// SIGKILL. The group dies with the bench: on Linux the group's shell gets
// SIGHUP when the bench dies (Pdeathsig, even after SIGKILL) and kills the
// whole group; PIDFile, when set, records the group so that a later run or
// `joulemark runs finalize` reaps it where that could not happen.
type ProcessEngine struct {
	Cmd     string
	Grace   time.Duration
	PIDFile string

	mu     sync.Mutex
	logs   io.Writer
	cmd    *exec.Cmd
	exited chan struct{}
	err    error
}

// NewProcessEngine returns an engine controller for command line cmd.
func NewProcessEngine(cmd string, grace time.Duration) *ProcessEngine {
	return &ProcessEngine{Cmd: cmd, Grace: grace, exited: make(chan struct{})}
}

// CaptureLogs sends the process' stdout and stderr to w.
func (e *ProcessEngine) CaptureLogs(w io.Writer) { e.logs = w }

// Start launches the process.
func (e *ProcessEngine) Start(ctx context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.cmd != nil {
		return errors.New("engine process already started")
	}
	c := exec.Command("sh", "-c", groupScript(e.Cmd))
	c.SysProcAttr = processGroupAttr()
	if e.logs != nil {
		c.Stdout, c.Stderr = e.logs, e.logs
	}
	if err := startLocked(c); err != nil {
		return fmt.Errorf("starting engine command: %w", err)
	}
	e.cmd = c
	if e.PIDFile != "" {
		if err := writeEnginePID(e.PIDFile, c.Process.Pid, e.Cmd); err != nil {
			_ = syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
			return err
		}
	}
	go func() {
		err := c.Wait()
		e.mu.Lock()
		if err == nil {
			err = errors.New("exited with status 0")
		}
		e.err = err
		e.mu.Unlock()
		if e.PIDFile != "" && !groupAlive(c.Process.Pid) {
			_ = os.Remove(e.PIDFile)
		}
		close(e.exited)
	}()
	return nil
}

// Exited is closed when the process ended.
func (e *ProcessEngine) Exited() <-chan struct{} { return e.exited }

// ExitErr says how the process ended (nil while it runs).
func (e *ProcessEngine) ExitErr() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.err
}

// Stop ends the process group: SIGTERM, Grace, SIGKILL.
func (e *ProcessEngine) Stop(ctx context.Context) error {
	e.mu.Lock()
	c := e.cmd
	e.mu.Unlock()
	if c == nil {
		return nil
	}
	select {
	case <-e.exited:
		return nil
	default:
	}
	pgid := c.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	t := time.NewTimer(e.Grace)
	defer t.Stop()
	select {
	case <-e.exited:
		return nil
	case <-t.C:
	case <-ctx.Done():
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	select {
	case <-e.exited:
		if ctx.Err() != nil {
			return fmt.Errorf("engine stop interrupted, killed: %w", ctx.Err())
		}
		return fmt.Errorf("engine ignored SIGTERM for %s: killed", e.Grace)
	case <-time.After(10 * time.Second):
		return errors.New("engine process did not die after SIGKILL")
	}
}

// HookEngine runs shell hooks for an externally managed engine (a k8s
// scale, a systemd unit); each hook must exit 0.
type HookEngine struct {
	StartCmd, StopCmd string
	logs              io.Writer
}

// CaptureLogs sends the hooks' output to w.
func (h *HookEngine) CaptureLogs(w io.Writer) { h.logs = w }

// Start runs the start hook.
func (h *HookEngine) Start(ctx context.Context) error { return h.run(ctx, "start", h.StartCmd) }

// Stop runs the stop hook.
func (h *HookEngine) Stop(ctx context.Context) error { return h.run(ctx, "stop", h.StopCmd) }

func (h *HookEngine) run(ctx context.Context, name, cmd string) error {
	c := exec.CommandContext(ctx, "sh", "-c", cmd)
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	c.Cancel = func() error { return syscall.Kill(-c.Process.Pid, syscall.SIGKILL) }
	if h.logs != nil {
		fmt.Fprintf(h.logs, "# engine %s hook: %s\n", name, time.Now().UTC().Format(time.RFC3339Nano))
		c.Stdout, c.Stderr = h.logs, h.logs
	}
	if err := c.Run(); err != nil {
		return fmt.Errorf("engine %s hook: %w", name, err)
	}
	return nil
}

// syncWriter serialises writes to the engine log from several sources.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}
