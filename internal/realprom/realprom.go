// Package realprom starts a real Prometheus server (Debian's prometheus
// package, 2.42 or newer) on a random loopback port for tests, and stops it
// when the test ends. Locally a missing binary skips the test; in CI it fails.
package realprom

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/joulemark/joulemark/internal/testenv"
)

// Server is a running Prometheus.
type Server struct {
	URL     string // http://127.0.0.1:PORT
	DataDir string
	cmd     *exec.Cmd
	log     *syncBuffer
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
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		port, err := freePort()
		if err != nil {
			t.Fatal(err)
		}
		s := &Server{URL: fmt.Sprintf("http://127.0.0.1:%d", port), DataDir: filepath.Join(dir, fmt.Sprintf("data-%d", attempt)), log: &syncBuffer{}}
		args := append([]string{
			"--config.file=" + cfgPath,
			"--storage.tsdb.path=" + s.DataDir,
			fmt.Sprintf("--web.listen-address=127.0.0.1:%d", port),
			"--web.enable-remote-write-receiver",
			"--web.enable-lifecycle",
			"--log.level=warn",
		}, extraArgs...)
		s.cmd = exec.Command(bin, args...)
		s.cmd.Dir = dir
		s.cmd.Stdout, s.cmd.Stderr = s.log, s.log
		if err := s.cmd.Start(); err != nil {
			t.Fatalf("starting %s: %v", bin, err)
		}
		exited := make(chan error, 1)
		go func() { exited <- s.cmd.Wait() }()
		if err := waitReady(s.URL, exited, 30*time.Second); err != nil {
			_ = s.cmd.Process.Kill()
			lastErr = fmt.Errorf("%w\nprometheus log:\n%s", err, s.Log())
			continue
		}
		t.Cleanup(func() {
			_ = s.cmd.Process.Signal(os.Interrupt)
			select {
			case <-exited:
			case <-time.After(10 * time.Second):
				_ = s.cmd.Process.Kill()
				<-exited
			}
		})
		return s
	}
	t.Fatalf("prometheus did not become ready: %v", lastErr)
	return nil
}

func waitReady(url string, exited <-chan error, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	client := &http.Client{Timeout: time.Second}
	for time.Now().Before(deadline) {
		select {
		case err := <-exited:
			return fmt.Errorf("prometheus exited before it was ready: %v", err)
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
	return fmt.Errorf("prometheus at %s not ready after %s", url, timeout)
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free loopback port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
