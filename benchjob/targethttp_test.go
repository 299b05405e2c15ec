package benchjob

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/joulemark/joulemark/benchjob/openai/openaitest"
	"github.com/joulemark/joulemark/internal/runarchive"
	"github.com/prometheus/common/config"
)

// TestRunTargetHTTP: the engine's HTTP client config (target_http) reaches
// the engine on every request of a run: the bearer token of its
// credentials file and its X-Scope-OrgID header, on the streamed POSTs and
// on the readiness GETs; OPENAI_API_KEY does not override it. No secret
// of it lands in the archive (config.yaml holds <secret>).
func TestRunTargetHTTP(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-from-env")
	eng := openaitest.New(openaitest.Behavior{Tokens: 4})
	defer eng.Close()
	var mu sync.Mutex
	bad := map[string]string{} // path: what was wrong
	seen := map[string]bool{}
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen[r.URL.Path] = true
		a, o, g := r.Header.Get("Authorization"), r.Header.Get("X-Scope-OrgID"), r.Header.Get("X-Gateway-Key")
		if a != "Bearer sk-from-file" || o != "tenant-a" || g != "gw-inline-secret" {
			bad[r.URL.Path] = "Authorization " + a + ", X-Scope-OrgID " + o + ", X-Gateway-Key " + g
		}
		mu.Unlock()
		// Forward to the engine.
		req, _ := http.NewRequestWithContext(r.Context(), r.Method, eng.URL+r.URL.RequestURI(), r.Body)
		req.Header = r.Header.Clone()
		resp, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		for k, v := range resp.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(resp.StatusCode)
		_, _ = io.Copy(flushWriter{w}, resp.Body)
	}))
	defer front.Close()
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "token")
	if err := os.WriteFile(keyFile, []byte("sk-from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(t, front.URL+"/v1")
	cfg.TargetHTTP.Authorization = &config.Authorization{Type: "Bearer", CredentialsFile: keyFile}
	cfg.TargetHTTP.HTTPHeaders = &config.Headers{Headers: map[string]config.Header{
		"X-Scope-OrgID": {Values: []string{"tenant-a"}}, "X-Gateway-Key": {Secrets: []config.Secret{"gw-inline-secret"}}}}
	res, err := runFake(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != runarchive.StatusCompleted {
		t.Fatalf("status %q flags %v", res.Status, res.Flags)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, p := range []string{"/v1/completions", "/v1/models", "/health"} {
		if !seen[p] {
			t.Errorf("no request for %s", p)
		}
	}
	for p, what := range bad {
		t.Errorf("%s: %s", p, what)
	}
	// The secret is in no archive file; config.yaml records it redacted.
	if b, err := os.ReadFile(filepath.Join(res.ArchiveDir, runarchive.ConfigFile)); err != nil || !strings.Contains(string(b), "<secret>") {
		t.Errorf("config.yaml without the redacted target_http header: %v\n%s", err, b)
	}
	filepath.WalkDir(res.ArchiveDir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			b, _ := os.ReadFile(p)
			for _, secret := range []string{"sk-from-file", "gw-inline-secret"} {
				if strings.Contains(string(b), secret) {
					t.Errorf("%s holds the secret %s", p, secret)
				}
			}
		}
		return nil
	})
}

// flushWriter flushes after every write, so the stream passes as it comes.
type flushWriter struct{ w http.ResponseWriter }

func (f flushWriter) Write(p []byte) (int, error) {
	n, err := f.w.Write(p)
	if fl, ok := f.w.(http.Flusher); ok {
		fl.Flush()
	}
	return n, err
}
