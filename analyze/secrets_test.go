package analyze

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"
)

// TestPrometheusURLSecretsRedacted: analyze's errors about its Prometheus
// (an invalid URL, an unreachable one) show the URL's password and secret
// query parameters as xxxxx.
func TestPrometheusURLSecretsRedacted(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	for _, raw := range []string{
		"http://u:PROMsecret@" + addr + "/?token=QUERYsecret",
		"http://u:PROMsecret@" + addr + "/api/v1/query?token=QUERYsecret",
		"u:PROMsecret@" + addr,
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err := loadChecked(ctx, Config{PrometheusURL: raw, RunID: "life1", Now: time.Unix(1e9, 0)})
		cancel()
		if err == nil {
			t.Fatalf("loadChecked(%s) succeeded", raw)
		}
		if msg := err.Error(); strings.Contains(msg, "PROMsecret") || strings.Contains(msg, "QUERYsecret") || !strings.Contains(msg, "xxxxx") {
			t.Errorf("loadChecked(%s) = %q: want the secrets shown as xxxxx", raw, msg)
		}
	}
}
