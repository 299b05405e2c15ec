package benchjob

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/joulemark/joulemark/benchjob/openai/openaitest"
)

// urlSecrets are the passwords and query secrets TestURLSecretsRedacted
// puts in every URL of a run.
var urlSecrets = []string{"PASSW0RDxyz", "RWsecret77", "RWtoken99", "PROMsecret5", "EXPsecret3"}

// withUser puts user:pass into an http URL.
func withUser(raw, user string) string { return strings.Replace(raw, "http://", "http://"+user+"@", 1) }

// fakePrometheus answers every query with an empty vector (the run id is new).
func fakePrometheus(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"status":"success","data":{"resultType":"vector","result":[]}}`)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// assertNoSecrets fails when any URL secret is in text.
func assertNoSecrets(t *testing.T, what, text string) {
	t.Helper()
	for _, s := range urlSecrets {
		if strings.Contains(text, s) {
			t.Errorf("%s shows the secret %s:\n%s", what, s, text)
		}
	}
}

// TestURLSecretsRedacted: passwords and secret query parameters in the
// target, exporter, remote-write and Prometheus URLs reach neither the
// log, the manifest, config.yaml, the result nor any error (pre-flight,
// validation), which show them as xxxxx.
func TestURLSecretsRedacted(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "")
	srv := openaitest.New(openaitest.Behavior{Tokens: 4, MaxModelLen: 8192})
	defer srv.Close()
	exp := newFakeExporter(t, "exp-token-123")
	rw := newRWReceiver(t)
	prom := fakePrometheus(t)
	tokFile := filepath.Join(t.TempDir(), "tok")
	os.WriteFile(tokFile, []byte("exp-token-123\n"), 0o600)

	cfg := testConfig(t, withUser(srv.BaseURL(), "alice:PASSW0RDxyz"))
	cfg.ExporterTokenFile = tokFile
	cfg.Exporters = []string{withUser(exp.URL, "dave:EXPsecret3")}
	cfg.RemoteWrite.URL = withUser(rw.URL, "bob:RWsecret77") + "/api/v1/write?tenant=a&token=RWtoken99"
	cfg.Prometheus.URL = withUser(prom.URL, "carol:PROMsecret5")
	cfg.RunID = "secrets-1"
	var logs strings.Builder
	opts := testOptions()
	opts.Engine, opts.Logger = &fakeEngine{}, slogTo(&logs)
	res, err := Run(context.Background(), cfg, opts)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if !strings.Contains(logs.String(), "alice:xxxxx@") {
		t.Errorf("the log does not show the target redacted:\n%s", logs.String())
	}
	assertNoSecrets(t, "the log", logs.String())
	for _, f := range []string{"manifest.json", "config.yaml"} {
		b, err := os.ReadFile(filepath.Join(res.ArchiveDir, f))
		if err != nil {
			t.Fatal(err)
		}
		assertNoSecrets(t, f, string(b))
		if !strings.Contains(string(b), "token=xxxxx") {
			t.Errorf("%s does not show the remote-write URL redacted:\n%s", f, b)
		}
	}
	b, _ := json.Marshal(res)
	assertNoSecrets(t, "the result", string(b))

	// pre-flight: every party down
	srv.Close()
	exp.Close()
	rw.Close()
	prom.Close()
	cfg.RunID, cfg.Engine.NoLifecycle, opts.Engine = "secrets-2", true, nil
	logs.Reset()
	_, err = Run(context.Background(), cfg, opts)
	if err == nil || !strings.Contains(err.Error(), "pre-flight") || !strings.Contains(err.Error(), "carol:xxxxx@") {
		t.Fatalf("Run with every party down = %v, want a pre-flight error naming the redacted URLs", err)
	}
	assertNoSecrets(t, "the pre-flight error", err.Error())
	assertNoSecrets(t, "the pre-flight log", logs.String())

	// validation
	cfg.Target = "ftp://alice:PASSW0RDxyz@engine/v1"
	cfg.RemoteWrite.URL = "bob:RWsecret77@rw:9090?token=RWtoken99"
	if _, err := Run(context.Background(), cfg, opts); err == nil || !strings.Contains(err.Error(), "target") {
		t.Fatalf("Run with an ftp target = %v, want a validation error", err)
	} else {
		assertNoSecrets(t, "the validation error", err.Error())
	}
}
