// Package realprom starts a real Prometheus server (Debian's prometheus
// package, 2.42 or newer), or VictoriaMetrics, on a random loopback port for
// tests, and stops it when the test ends. Locally a missing binary skips
// the test; in CI it fails.
package realprom

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/joulemark/joulemark/internal/testkit/testenv"
	"github.com/joulemark/joulemark/internal/testkit/testnet"
)

// Server is a running Prometheus.
type Server struct {
	URL     string // http://127.0.0.1:PORT
	DataDir string
	cmd     *exec.Cmd
	log     *testnet.SyncBuffer
	bin     string
	args    []string
	dir     string
	exited  chan error
}

// Log returns what the server printed so far.
func (s *Server) Log() string { return s.log.String() }

// DefaultConfig is a minimal configuration with a 1 s scrape and evaluation
// interval and a one-day out-of-order window, so per-request samples written
// with past timestamps are accepted.
const DefaultConfig = `global:
  scrape_interval: 1s
  evaluation_interval: 1s
storage:
  tsdb:
    out_of_order_time_window: 1d
`

// Start runs prometheus with configYAML (DefaultConfig when empty) and the
// remote-write receiver enabled, waits until it is ready (at most 30 s) and
// registers its shutdown with t.Cleanup. Extra files (rule files referenced
// by the config) can be written with WriteFile before Start by using dir.
func Start(t testing.TB, configYAML string, extraArgs ...string) *Server {
	t.Helper()
	bin := testenv.LookPath(t, "prometheus")
	if configYAML == "" {
		configYAML = DefaultConfig
	}
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfgPath, []byte(configYAML), 0o644); err != nil {
		t.Fatal(err)
	}
	return launch(t, bin, dir, func(addr, dataDir string) []string {
		return append([]string{
			"--config.file=" + cfgPath,
			"--storage.tsdb.path=" + dataDir,
			"--web.listen-address=" + addr,
			"--web.enable-remote-write-receiver",
			"--web.enable-lifecycle",
			"--log.level=warn",
		}, extraArgs...)
	})
}

// StartVictoriaMetrics runs VictoriaMetrics (Debian's victoria-metrics
// package, single node) the same way: a random loopback port, its own
// data directory, a 100-year retention so fixtures with old timestamps are
// kept, ready within 30 s and stopped when the test ends. It takes
// Prometheus remote write at /api/v1/write and answers the query API, but
// has no remote read. Locally a missing binary skips the test; in CI it
// fails.
func StartVictoriaMetrics(t testing.TB) *Server {
	t.Helper()
	bin := testenv.LookPath(t, "victoria-metrics")
	return launch(t, bin, t.TempDir(), func(addr, dataDir string) []string {
		return []string{"-storageDataPath=" + dataDir, "-httpListenAddr=" + addr, "-retentionPeriod=100y", "-loggerLevel=WARN"}
	})
}

// Flush makes what VictoriaMetrics took so far searchable at once (its
// /internal/force_flush); Prometheus needs no such call.
func (s *Server) Flush(t testing.TB) {
	t.Helper()
	resp, err := http.Get(s.URL + "/internal/force_flush")
	if err != nil {
		t.Fatalf("flushing %s: %v", s.URL, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("flushing %s: status %s", s.URL, resp.Status)
	}
}

// launch starts bin with the arguments args gives for a free loopback
// address and a data directory under dir, up to three times (a port taken
// meanwhile), and waits until it is ready.
func launch(t testing.TB, bin, dir string, args func(addr, dataDir string) []string) *Server {
	t.Helper()
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		addr := testnet.FreeAddr(t)
		s := &Server{URL: "http://" + addr, DataDir: filepath.Join(dir, fmt.Sprintf("data-%d", attempt)), log: &testnet.SyncBuffer{}}
		s.bin, s.args, s.dir = bin, args(addr, s.DataDir), dir
		if err := s.start(); err != nil {
			t.Fatalf("starting %s: %v", bin, err)
		}
		if err := waitReady(s.URL, s.exited, 30*time.Second); err != nil {
			_ = s.cmd.Process.Kill()
			lastErr = fmt.Errorf("%w\nserver log:\n%s", err, s.Log())
			continue
		}
		t.Cleanup(s.Stop)
		return s
	}
	t.Fatalf("%s did not become ready: %v", filepath.Base(bin), lastErr)
	return nil
}

func waitReady(url string, exited <-chan error, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	client := &http.Client{Timeout: time.Second}
	for time.Now().Before(deadline) {
		select {
		case err := <-exited:
			return fmt.Errorf("the server exited before it was ready: %v", err)
		default:
		}
		resp, err := client.Get(url + "/-/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("the server at %s was not ready after %s", url, timeout)
}

func (s *Server) start() error {
	s.cmd = exec.Command(s.bin, s.args...)
	s.cmd.Dir = s.dir
	s.cmd.Stdout, s.cmd.Stderr = s.log, s.log
	if err := s.cmd.Start(); err != nil {
		return err
	}
	s.exited = make(chan error, 1)
	go func(c *exec.Cmd, exited chan<- error) { exited <- c.Wait() }(s.cmd, s.exited)
	return nil
}

// Stop shuts the server down (SIGINT, SIGKILL after 10 s): an outage.
// Stopping a stopped server does nothing.
func (s *Server) Stop() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Signal(os.Interrupt)
	select {
	case <-s.exited:
	case <-time.After(10 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
	s.cmd = nil
}

// Restart starts a stopped server again on the same address and data
// directory, and waits until it is ready (30 s at most).
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	s.Stop()
	if err := s.start(); err != nil {
		t.Fatalf("restarting prometheus: %v", err)
	}
	if err := waitReady(s.URL, s.exited, 30*time.Second); err != nil {
		t.Fatalf("restarting prometheus: %v\nprometheus log:\n%s", err, s.Log())
	}
}
