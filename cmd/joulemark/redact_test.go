package main

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/joulemark/joulemark/internal/runarchive"
)

// TestURLSecretsNeverShown: every command given a URL with a password and
// a secret query value keeps both out of its log, its errors and its
// output, whatever library quotes the URL (net/http's errors keep a query
// whole) - issue 33's redaction audit: phase, runs push, analyze
// production, demo.
func TestURLSecretsNeverShown(t *testing.T) {
	const pass, query = "PASSW0RDxyz", "QUERYs3cret"
	dir := t.TempDir()
	token := filepath.Join(dir, "token")
	if err := os.WriteFile(token, []byte("a-token-of-enough-bytes-1234567890\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	refusing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "refused: "+r.URL.String(), http.StatusBadRequest) // echoes the query
	}))
	defer refusing.Close()
	host := strings.TrimPrefix(refusing.URL, "http://")
	pushArchive(t, dir, "pushed-1")
	for _, args := range [][]string{
		{"phase", "r1", "idle", "--exporter.url", "http://u:" + pass + "@127.0.0.1:1?token=" + query, "--exporter.bearer-token-file", token},
		{"runs", "push", "pushed-1", "--runs-dir", dir, "--remote-write.url", "http://u:" + pass + "@" + host + "/api/v1/write?token=" + query},
		{"analyze", "production", "--prometheus.url", "http://u:" + pass + "@127.0.0.1:1/?api_key=" + query, "--from", "now-1h"},
		{"analyze", "production", "--prometheus.url", "http://u:" + pass + "@" + host + "/?api_key=" + query, "--from", "now-1h"},
		{"demo", "--prometheus.url", "ftp://u:" + pass + "@127.0.0.1:1/?token=" + query, "--runs-dir", dir},
	} {
		var stdout, stderr bytes.Buffer
		code := run(t.Context(), append(args, "--log.level", "debug"), &stdout, &stderr)
		out := stdout.String() + stderr.String()
		if code == 0 || strings.Contains(out, pass) || strings.Contains(out, query) {
			t.Errorf("%v: exit %d, output shows a secret (or no error):\n%s", args[:2], code, out)
		}
	}
}

// pushArchive creates a finished run archive of one request under dir.
func pushArchive(t *testing.T, dir, id string) {
	t.Helper()
	run, err := runarchive.Create(dir, id)
	if err != nil {
		t.Fatal(err)
	}
	now := float64(time.Now().Unix())
	if err := run.WriteManifest(&runarchive.Manifest{RunID: id, Status: runarchive.StatusCompleted, Created: now - 10, Ended: now}); err != nil {
		t.Fatal(err)
	}
	reqs, err := run.CreateRequests()
	if err != nil {
		t.Fatal(err)
	}
	reqs.Append(&runarchive.Request{Phase: "formal", SendTime: now - 5, EndTime: now - 4, LatencySeconds: 1, OutputTokens: 3, InputTokens: 5, Success: true})
	if err := reqs.Close(); err != nil {
		t.Fatal(err)
	}
}
