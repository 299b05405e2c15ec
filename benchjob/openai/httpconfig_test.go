package openai

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/joulemark/joulemark/internal/contract"
	"github.com/prometheus/common/config"
)

// seen records the headers each path got.
type seen struct {
	mu   sync.Mutex
	hdrs map[string]http.Header // by path
}

func (s *seen) get(path string) http.Header {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hdrs[path]
}

// engine answers /v1/completions with a stream and /v1/models with a
// list, noting each request's headers by path.
func engine(s *seen) http.Handler {
	body := stream(3)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		s.mu.Lock()
		if s.hdrs == nil {
			s.hdrs = map[string]http.Header{}
		}
		s.hdrs[r.URL.Path] = r.Header.Clone()
		s.mu.Unlock()
		if strings.HasSuffix(r.URL.Path, "/models") {
			_, _ = io.WriteString(w, `{"data":[{"id":"m"}]}`)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write(body)
	})
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// loadHTTPConfig loads yaml as --target.http-config-file does.
func loadHTTPConfig(t *testing.T, yaml string) config.HTTPClientConfig {
	t.Helper()
	c, _, err := config.LoadHTTPConfigFile(writeFile(t, "http.yml", yaml))
	if err != nil {
		t.Fatal(err)
	}
	return *c
}

// streamAndList sends one streamed POST and one GET.
func streamAndList(t *testing.T, c *Client) error {
	t.Helper()
	if resp := c.Stream(context.Background(), &Request{Model: "m", Prompt: "p", MaxTokens: 3}); resp.Err != nil {
		return resp.Err
	}
	_, err := c.Models(context.Background())
	return err
}

// TestHTTPConfigTLS: the CA, the server name and insecure_skip_verify of
// the config file apply to the client's own TLS connections (the streamed
// POSTs) and to net/http (the GETs); without the CA both fail.
func TestHTTPConfigTLS(t *testing.T) {
	var s seen
	srv := httptest.NewTLSServer(engine(&s))
	defer srv.Close()
	ca := writeFile(t, "ca.pem", string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})))
	caConf := "tls_config:\n  ca_file: " + ca + "\n"
	// httptest's certificate is for 127.0.0.1 and example.com.
	cases := []struct {
		name, yaml string
		ok         bool
	}{
		{"ca", caConf, true},
		{"no ca", "", false},
		{"server name", caConf + "  server_name: example.com\n", true},
		{"wrong server name", caConf + "  server_name: wrong.test\n", false},
		{"insecure", "tls_config:\n  insecure_skip_verify: true\n", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{BaseURL: srv.URL + "/v1"}
			if tc.yaml != "" {
				cfg.HTTP = loadHTTPConfig(t, tc.yaml)
			}
			c, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if c.conns == nil {
				t.Fatal("https target not on the client's own connections")
			}
			resp := c.Stream(context.Background(), &Request{Model: "m", Prompt: "p", MaxTokens: 3})
			_, gerr := c.Models(context.Background())
			if tc.ok && (resp.Err != nil || gerr != nil) {
				t.Fatalf("stream: %v; GET: %v", resp.Err, gerr)
			}
			if !tc.ok && (ClassOf(resp.Err) != contract.ClassConnect || gerr == nil || !strings.Contains(gerr.Error(), "certificate")) {
				t.Fatalf("want certificate errors, got stream: %v; GET: %v", resp.Err, gerr)
			}
		})
	}
}

// TestHTTPConfigAuthHeaders: authorization from a credentials file (and
// basic_auth) and http_headers reach the server on the streamed POSTs,
// over the client's own connections and through net/http, and on GETs.
func TestHTTPConfigAuthHeaders(t *testing.T) {
	var s seen
	srv := httptest.NewServer(engine(&s))
	defer srv.Close()
	token := writeFile(t, "token", "s3cret\n")
	org := writeFile(t, "org", "tenant-b\n")
	cases := []struct {
		name, yaml, auth string
		apiKey           string
	}{
		{"bearer file", "authorization:\n  credentials_file: " + token + "\n", "Bearer s3cret", ""},
		{"type", "authorization:\n  type: Token\n  credentials: abc\n", "Token abc", ""},
		{"basic", "basic_auth:\n  username: jo\n  password_file: " + token + "\n", "Basic am86czNjcmV0", ""},
		{"api key", "", "Bearer k1", "k1"},
	}
	headers := "http_headers:\n  X-Scope-OrgID:\n    values: [tenant-a]\n    files: [" + org + "]\n"
	for _, tc := range cases {
		for _, netHTTP := range []bool{false, true} {
			name := tc.name
			if netHTTP {
				name += "/net-http"
			}
			t.Run(name, func(t *testing.T) {
				c, err := New(Config{BaseURL: srv.URL + "/v1", APIKey: tc.apiKey, HTTP: loadHTTPConfig(t, tc.yaml+headers)})
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				if c.conns == nil {
					t.Fatal("plain target not on the client's own connections")
				}
				if netHTTP {
					c.conns = nil
				}
				if err := streamAndList(t, c); err != nil {
					t.Fatal(err)
				}
				for _, p := range []string{"/v1/completions", "/v1/models"} {
					h := s.get(p)
					if got := h.Get("Authorization"); got != tc.auth {
						t.Errorf("%s: Authorization %q, want %q", p, got, tc.auth)
					}
					if got := strings.Join(h.Values("X-Scope-Orgid"), ","); got != "tenant-a,tenant-b" {
						t.Errorf("%s: X-Scope-OrgID %q, want tenant-a,tenant-b", p, got)
					}
				}
			})
		}
	}
}

// TestHTTPConfigProxy: proxy_url sends the streamed POSTs and the GETs
// through the proxy (net/http), with the configured headers.
func TestHTTPConfigProxy(t *testing.T) {
	var s seen
	proxy := httptest.NewServer(engine(&s)) // answers as the proxy, noting the absolute URLs
	defer proxy.Close()
	var hosts sync.Map
	inner := proxy.Config.Handler
	proxy.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hosts.Store(r.URL.Host, true)
		inner.ServeHTTP(w, r)
	})
	c, err := New(Config{BaseURL: "http://engine.invalid:8000/v1",
		HTTP: loadHTTPConfig(t, "proxy_url: "+proxy.URL+"\nauthorization:\n  credentials: t\n")})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.conns != nil {
		t.Fatal("proxied target on the client's own connections")
	}
	if err := streamAndList(t, c); err != nil {
		t.Fatal(err)
	}
	if _, ok := hosts.Load("engine.invalid:8000"); !ok {
		t.Fatal("the proxy saw no request for engine.invalid:8000")
	}
	if got := s.get("/v1/completions").Get("Authorization"); got != "Bearer t" {
		t.Fatalf("Authorization through the proxy %q", got)
	}
}

// TestHTTPConfigErrors: conflicts and unsupported settings are errors that
// name both sides, and never carry a secret.
func TestHTTPConfigErrors(t *testing.T) {
	secretFile := writeFile(t, "bad", "ab\ncd-secret\n")
	empty := writeFile(t, "empty", "\n")
	cases := []struct {
		name, url, apiKey, yaml string
		want                    []string
	}{
		{"api key and authorization", "", "k1", "authorization:\n  credentials: x\n", []string{"API key", "authorization"}},
		{"api key and basic auth", "", "k1", "basic_auth:\n  username: u\n  password: p\n", []string{"API key", "basic_auth"}},
		{"userinfo and authorization", "http://u:p@127.0.0.1:1/v1", "", "authorization:\n  credentials: x\n", []string{"user:password", "authorization"}},
		{"oauth2", "", "", "oauth2:\n  client_id: a\n  token_url: http://x/\n", []string{"oauth2"}},
		{"empty credentials file", "", "", "authorization:\n  credentials_file: " + empty + "\n", []string{"credentials_file", "is empty"}},
		{"header line break", "", "", "http_headers:\n  X-A:\n    files: [" + secretFile + "]\n", []string{"X-A", "line breaks"}},
		{"missing ca", "", "", "tls_config:\n  ca_file: /nonexistent/ca.pem\n", []string{"tls_config", "/nonexistent/ca.pem"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			u := tc.url
			if u == "" {
				u = "http://127.0.0.1:1/v1"
			}
			_, err := New(Config{BaseURL: u, APIKey: tc.apiKey, HTTP: loadHTTPConfig(t, tc.yaml)})
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not name %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "secret") || strings.Contains(err.Error(), "k1") {
				t.Errorf("error %q carries a secret", err)
			}
		})
	}
}

// TestHTTPConfigHeadPrebuilt: the configured headers are in the prebuilt
// request head, so a request costs no more with them.
func TestHTTPConfigHeadPrebuilt(t *testing.T) {
	c, err := New(Config{BaseURL: "http://127.0.0.1:1/v1",
		HTTP: loadHTTPConfig(t, "authorization:\n  credentials: x\nhttp_headers:\n  X-Scope-OrgID:\n    values: [a]\n")})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	head := string(c.heads[Completions])
	for _, w := range []string{"\r\nAuthorization: Bearer x\r\n", "\r\nX-Scope-Orgid: a\r\n"} {
		if !strings.Contains(head, w) {
			t.Errorf("head %q lacks %q", head, w)
		}
	}
}

// clientCert writes a self-signed client certificate (its own CA) and its
// key as PEM files.
func clientCert(t *testing.T) (cert *x509.Certificate, certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "joulemark-bench"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		BasicConstraintsValid: true, IsCA: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	if cert, err = x509.ParseCertificate(der); err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return cert, writeFile(t, "client.pem", string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))),
		writeFile(t, "client-key.pem", string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kb})))
}

// TestHTTPConfigClientCert: cert_file and key_file of the config file are
// presented on the client's own TLS connections and by net/http to a
// server that requires a client certificate; without them both fail.
func TestHTTPConfigClientCert(t *testing.T) {
	var s seen
	srv := httptest.NewUnstartedServer(engine(&s))
	cert, certFile, keyFile := clientCert(t)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	srv.TLS = &tls.Config{ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pool}
	srv.StartTLS()
	defer srv.Close()
	ca := writeFile(t, "ca.pem", string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})))
	for _, withCert := range []bool{true, false} {
		yaml := "tls_config:\n  ca_file: " + ca + "\n"
		if withCert {
			yaml += "  cert_file: " + certFile + "\n  key_file: " + keyFile + "\n"
		}
		c, err := New(Config{BaseURL: srv.URL + "/v1", HTTP: loadHTTPConfig(t, yaml)})
		if err != nil {
			t.Fatal(err)
		}
		resp := c.Stream(context.Background(), &Request{Model: "m", Prompt: "p", MaxTokens: 3})
		_, gerr := c.Models(context.Background())
		c.Close()
		if withCert && (resp.Err != nil || gerr != nil) {
			t.Fatalf("with the client certificate: stream: %v; GET: %v", resp.Err, gerr)
		}
		if !withCert && (resp.Err == nil || gerr == nil) {
			t.Fatalf("without the client certificate: stream: %v; GET: %v", resp.Err, gerr)
		}
	}
}
