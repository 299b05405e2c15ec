package analyze

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestClientAuthReachesServer checks that bearer token and extra headers are
// sent with every query, the token read from its file.
func TestClientAuthReachesServer(t *testing.T) {
	dir := t.TempDir()
	tok := filepath.Join(dir, "token")
	if err := os.WriteFile(tok, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var auth, org []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		auth, org = append(auth, r.Header.Get("Authorization")), append(org, r.Header.Get("X-Scope-OrgID"))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"status":"success","data":{"resultType":"vector","result":[]}}`))
	}))
	defer srv.Close()
	hc, err := ClientAuth{BearerTokenFile: tok, Headers: map[string]string{"x-scope-orgid": "tenant-a"}}.HTTPConfig()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = Load(ctx, Config{PrometheusURL: srv.URL, HTTP: hc, RunID: "r1", Params: DefaultParams()})
	if err == nil || !strings.Contains(err.Error(), "run not found") {
		t.Fatalf("err = %v, want run not found", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(auth) == 0 || auth[0] != "Bearer s3cret" || org[0] != "tenant-a" {
		t.Errorf("server saw Authorization %q, X-Scope-OrgID %q", auth, org)
	}
}

func TestClientAuthValidation(t *testing.T) {
	if _, err := (ClientAuth{BasicPasswordFile: "/p"}).HTTPConfig(); err == nil {
		t.Error("password file without user accepted")
	}
	if _, err := (ClientAuth{BearerTokenFile: "/t", BasicUser: "u"}).HTTPConfig(); err == nil {
		t.Error("bearer and basic auth together accepted")
	}
	c, err := (ClientAuth{BasicUser: "u", BasicPasswordFile: "/p"}).HTTPConfig()
	if err != nil || c.BasicAuth.Username != "u" {
		t.Errorf("basic auth: %v %+v", err, c.BasicAuth)
	}
}

func TestConfigValidate(t *testing.T) {
	for _, c := range []Config{
		{RunID: "r", Params: DefaultParams()},
		{PrometheusURL: "localhost:9090", RunID: "r", Params: DefaultParams()},
		{PrometheusURL: "http://p:9090", Params: DefaultParams()},
		{PrometheusURL: "http://p:9090", RunID: "r", Lookback: -1, Params: DefaultParams()},
	} {
		if err := c.Validate(); err == nil {
			t.Errorf("invalid config accepted: %+v", c)
		}
	}
}

func TestConfigDefaults(t *testing.T) {
	c := Config{PrometheusURL: "http://p:9090", RunID: "r"}
	if err := c.Validate(); err != nil {
		t.Fatalf("zero Params and Lookback should take the defaults: %v", err)
	}
	if d := c.withDefaults(); d.Params != DefaultParams() || d.Lookback != DefaultLookback {
		t.Errorf("defaults not applied: %+v", d)
	}
}
