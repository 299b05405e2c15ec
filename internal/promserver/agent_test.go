package promserver

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/joulemark/joulemark/internal/testkit/promwait"
	"github.com/joulemark/joulemark/internal/testkit/testenv"
)

// TestPrometheusAgentRemoteWrite has a real Prometheus (Debian's 2.42, in
// agent mode) scrape a target and remote-write to the embedded server.
func TestPrometheusAgentRemoteWrite(t *testing.T) {
	bin := testenv.LookPath(t, "prometheus")
	reg := prometheus.NewRegistry()
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: "joulemark_gpu_energy_joules_total", Help: "test"})
	c.Add(4242)
	reg.MustRegister(c)
	target := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	defer target.Close()

	s := startServer(t, Options{})
	dir := t.TempDir()
	cfg := fmt.Sprintf(`global:
  scrape_interval: 100ms
scrape_configs:
- job_name: agent-target
  static_configs:
  - targets: [%q]
remote_write:
- url: %s
  queue_config:
    batch_send_deadline: 100ms
`, target.Listener.Addr().String(), s.RemoteWriteURL())
	cfgFile := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfgFile, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--enable-feature=agent", "--config.file="+cfgFile,
		"--storage.agent.path="+filepath.Join(dir, "agent"), "--web.listen-address=127.0.0.1:0")
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 10 * time.Second
	out, err := os.Create(filepath.Join(dir, "prometheus.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cancel()
		_ = cmd.Wait()
		if t.Failed() {
			b, _ := os.ReadFile(out.Name())
			t.Logf("prometheus agent log:\n%s", b)
		}
	}()

	p := promAPI(t, s)
	promwait.Value(t, p, `up{job="agent-target"}`, "1", 30*time.Second)
	promwait.Value(t, p, `joulemark_gpu_energy_joules_total{job="agent-target"}`, "4242", 10*time.Second)
}
