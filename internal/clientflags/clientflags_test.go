package clientflags

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/alecthomas/kong"
	"github.com/joulemark/joulemark/internal/testkit/testenv"
	"github.com/prometheus/common/config"
)

type testCLI struct {
	Exporter    Exporter    `embed:"" prefix:"exporter."`
	RemoteWrite RemoteWrite `embed:"" prefix:"remote-write."`
	Prometheus  Prometheus  `embed:"" prefix:"prometheus."`
	Target      Target      `embed:"" prefix:"target."`
}

func parse(t *testing.T, args ...string) *testCLI {
	t.Helper()
	var cli testCLI
	p, err := kong.New(&cli)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Parse(args); err != nil {
		t.Fatalf("parsing %v: %v", args, err)
	}
	return &cli
}

func write(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// The flags are named by the prefix of the party, as docs/cli.md says.
func TestFlagNames(t *testing.T) {
	var cli testCLI
	p, err := kong.New(&cli)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, f := range p.Model.Flags {
		if !f.Hidden {
			got[f.Name] = true
		}
	}
	for _, party := range []string{ExporterPrefix, RemoteWritePrefix, PrometheusPrefix} {
		for _, f := range []string{"url", "http-config-file", "bearer-token-file"} {
			if !got[party+f] {
				t.Errorf("no flag --%s%s", party, f)
			}
			delete(got, party+f)
		}
	}
	for _, f := range []string{"http-config-file", "api-key-file"} {
		if !got[TargetPrefix+f] {
			t.Errorf("no flag --%s%s", TargetPrefix, f)
		}
		delete(got, TargetPrefix+f)
	}
	delete(got, "help")
	if len(got) > 0 {
		t.Errorf("unexpected visible flags %v", got)
	}
}

func TestHTTPConfig(t *testing.T) {
	dir := t.TempDir()
	token := write(t, dir, "token", "s3cret\n")
	pw := write(t, dir, "pw", "pw")
	headers := write(t, dir, "headers.yml", "http_headers:\n  X-Scope-OrgID:\n    values: [tenant-a]\ntls_config:\n  ca_file: ca.pem\n")
	basic := write(t, dir, "basic.yml", "basic_auth:\n  username: u\n  password_file: "+pw+"\n")
	authz := write(t, dir, "authz.yml", "authorization:\n  credentials_file: "+token+"\n")
	badYAML := write(t, dir, "bad.yml", "tls_config: [\n")
	unknown := write(t, dir, "unknown.yml", "basic_auth:\n  usrname: u\n")
	twoAuth := write(t, dir, "two.yml", "basic_auth:\n  username: u\nauthorization:\n  credentials: x\n")

	for _, tc := range []struct {
		name    string
		args    []string
		wantErr string // substring; "" for none
		check   func(t *testing.T, c config.HTTPClientConfig)
	}{
		{name: "default", args: nil, check: func(t *testing.T, c config.HTTPClientConfig) {
			if c.Authorization != nil || c.BasicAuth != nil || !c.FollowRedirects {
				t.Errorf("default config %+v", c)
			}
		}},
		{name: "shortcut", args: []string{"--prometheus.bearer-token-file", token}, check: func(t *testing.T, c config.HTTPClientConfig) {
			if c.Authorization == nil || c.Authorization.Type != "Bearer" || c.Authorization.CredentialsFile != token {
				t.Errorf("authorization %+v", c.Authorization)
			}
		}},
		{name: "file with headers and a relative CA", args: []string{"--prometheus.http-config-file", headers}, check: func(t *testing.T, c config.HTTPClientConfig) {
			if c.HTTPHeaders == nil || c.HTTPHeaders.Headers["X-Scope-OrgID"].Values[0] != "tenant-a" {
				t.Errorf("headers %+v", c.HTTPHeaders)
			}
			if c.TLSConfig.CAFile != filepath.Join(dir, "ca.pem") {
				t.Errorf("ca_file %q, want it relative to the file's directory", c.TLSConfig.CAFile)
			}
		}},
		{name: "file and shortcut combine", args: []string{"--prometheus.http-config-file", headers, "--prometheus.bearer-token-file", token},
			check: func(t *testing.T, c config.HTTPClientConfig) {
				if c.Authorization == nil || c.HTTPHeaders == nil {
					t.Errorf("authorization %+v headers %+v", c.Authorization, c.HTTPHeaders)
				}
			}},
		{name: "shortcut conflicts with authorization", args: []string{"--prometheus.http-config-file", authz, "--prometheus.bearer-token-file", token},
			wantErr: "--prometheus.bearer-token-file conflicts with authorization in --prometheus.http-config-file " + authz},
		{name: "shortcut conflicts with basic_auth", args: []string{"--prometheus.http-config-file", basic, "--prometheus.bearer-token-file", token},
			wantErr: "--prometheus.bearer-token-file conflicts with basic_auth"},
		{name: "bad YAML", args: []string{"--prometheus.http-config-file", badYAML}, wantErr: "--prometheus.http-config-file " + badYAML + ": yaml"},
		{name: "unknown field", args: []string{"--prometheus.http-config-file", unknown}, wantErr: "usrname"},
		{name: "invalid combination", args: []string{"--prometheus.http-config-file", twoAuth}, wantErr: "--prometheus.http-config-file " + twoAuth},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := parse(t, tc.args...).Prometheus.HTTPConfig()
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatal(err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
			case tc.check != nil:
				tc.check(t, c)
			}
			if err != nil && strings.Contains(err.Error(), "s3cret") {
				t.Errorf("the secret reached the error: %v", err)
			}
		})
	}
}

// The remote-write party builds its configuration like Prometheus'.
func TestRemoteWrite(t *testing.T) {
	dir := t.TempDir()
	token := write(t, dir, "token", "t")
	cli := parse(t, "--remote-write.url", "http://p/api/v1/write", "--remote-write.bearer-token-file", token)
	c, err := cli.RemoteWrite.HTTPConfig()
	if err != nil || cli.RemoteWrite.URL != "http://p/api/v1/write" || c.Authorization == nil {
		t.Errorf("remote write: url %q config %+v err %v", cli.RemoteWrite.URL, c, err)
	}
	if c, _ := cli.Prometheus.HTTPConfig(); c.Authorization != nil {
		t.Error("the remote-write token reached the Prometheus party")
	}
}

// The exporter token goes in the Authorization header unless the client
// config takes it.
func TestExporterToken(t *testing.T) {
	dir := t.TempDir()
	token := write(t, dir, "token", " phase-token\n")
	empty := write(t, dir, "empty", "\n")
	pw := write(t, dir, "pw", "pw")
	basic := write(t, dir, "basic.yml", "basic_auth:\n  username: u\n  password_file: "+pw+"\n")
	authz := write(t, dir, "authz.yml", "authorization:\n  credentials: from-file\n")
	for _, tc := range []struct {
		name       string
		env        string
		args       []string
		wantToken  string
		wantHeader bool
		wantErr    string
	}{
		{name: "file", args: []string{"--exporter.bearer-token-file", token}, wantToken: "phase-token"},
		{name: "env alias", env: "from-env", wantToken: "from-env"},
		{name: "file over env", env: "from-env", args: []string{"--exporter.bearer-token-file", token}, wantToken: "phase-token"},
		{name: "basic auth takes the header", args: []string{"--exporter.bearer-token-file", token, "--exporter.http-config-file", basic},
			wantToken: "phase-token", wantHeader: true},
		{name: "authorization in the file", env: "from-env", args: []string{"--exporter.http-config-file", authz}, wantHeader: true},
		{name: "authorization and token file", args: []string{"--exporter.http-config-file", authz, "--exporter.bearer-token-file", token},
			wantErr: "--exporter.bearer-token-file conflicts with authorization"},
		{name: "empty token file", args: []string{"--exporter.bearer-token-file", empty}, wantErr: "--exporter.bearer-token-file: " + empty + " is empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(TokenEnv, tc.env)
			cli := parse(t, append([]string{"--exporter.url", "http://a:9402", "--exporter.url", "http://b:9402"}, tc.args...)...)
			if len(cli.Exporter.URLs) != 2 {
				t.Errorf("urls %v", cli.Exporter.URLs)
			}
			tok, err := cli.Exporter.Token()
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			pc, err := cli.Exporter.PhaseClients("test", time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if header := pc.TokenInHeader(); tok != tc.wantToken || header != tc.wantHeader {
				t.Errorf("token %q header %v, want %q %v", tok, header, tc.wantToken, tc.wantHeader)
			}
			c, err := cli.Exporter.HTTPConfig()
			if err != nil || (c.Authorization != nil && c.Authorization.CredentialsFile == token) {
				t.Errorf("the phase token reached the HTTP config: %+v %v", c.Authorization, err)
			}
		})
	}
}

// A configuration from a file reaches the server: bearer token and an
// extra header (what a multi-tenant Mimir needs).
func TestConfigReachesServer(t *testing.T) {
	var got http.Header
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got = r.Header.Clone() }))
	defer srv.Close()
	dir := t.TempDir()
	token := write(t, dir, "token", "tok\n")
	file := write(t, dir, "http.yml", "http_headers:\n  X-Scope-OrgID:\n    values: [tenant-a]\n")
	c, err := parse(t, "--prometheus.http-config-file", file, "--prometheus.bearer-token-file", token).Prometheus.HTTPConfig()
	if err != nil {
		t.Fatal(err)
	}
	cl, err := config.NewClientFromConfig(c, "test")
	if err != nil {
		t.Fatal(err)
	}
	resp, err := cl.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got.Get("Authorization") != "Bearer tok" || got.Get("X-Scope-OrgID") != "tenant-a" {
		t.Errorf("server saw %v", got)
	}
}

// TestTarget: the engine's file and API key shortcut; the key with an
// authentication section in the file is an error naming both flags.
func TestTarget(t *testing.T) {
	dir := t.TempDir()
	key := write(t, dir, "key", "sk-1\n")
	ca := write(t, dir, "ca.pem", "")
	headers := write(t, dir, "headers.yml", "tls_config:\n  ca_file: ca.pem\n  server_name: engine.internal\nhttp_headers:\n  X-Scope-OrgID:\n    values: [a]\n")
	bearer := write(t, dir, "bearer.yml", "authorization:\n  credentials_file: key\n")
	basic := write(t, dir, "basic.yml", "basic_auth:\n  username: u\n  password_file: key\n")
	bad := write(t, dir, "bad.yml", "tls_confg: {}\n")

	c, err := parse(t, "--target.http-config-file", headers, "--target.api-key-file", key).Target.HTTPConfig()
	if err != nil {
		t.Fatal(err)
	}
	if c.TLSConfig.CAFile != ca || c.TLSConfig.ServerName != "engine.internal" || c.HTTPHeaders == nil || c.Authorization != nil {
		t.Fatalf("config %+v: want the file's TLS (CA relative to the file) and headers, no authorization", c)
	}
	c, err = parse(t, "--target.http-config-file", bearer).Target.HTTPConfig()
	if err != nil || c.Authorization == nil || c.Authorization.CredentialsFile != key || c.Authorization.Type != "Bearer" {
		t.Fatalf("bearer file: %+v, %v", c.Authorization, err)
	}
	c, err = parse(t).Target.HTTPConfig()
	if err != nil || !c.FollowRedirects || c.Authorization != nil {
		t.Fatalf("default: %+v, %v", c, err)
	}
	for _, tc := range []struct {
		file string
		want []string
	}{
		{bearer, []string{"--target.api-key-file", "authorization", "--target.http-config-file " + bearer}},
		{basic, []string{"--target.api-key-file", "basic_auth", "--target.http-config-file " + basic}},
	} {
		_, err := parse(t, "--target.http-config-file", tc.file, "--target.api-key-file", key).Target.HTTPConfig()
		for _, w := range tc.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%s with the key file: error %v, want it to name %q", tc.file, err, w)
			}
		}
	}
	if _, err := parse(t, "--target.http-config-file", bad).Target.HTTPConfig(); err == nil ||
		!strings.Contains(err.Error(), "--target.http-config-file "+bad) || !strings.Contains(err.Error(), "tls_confg") {
		t.Errorf("bad file: %v", err)
	}
}

// TestDocHTTPConfigExamples: every HTTP client config file the docs show
// (a ```yaml block of the file's top-level sections) loads as
// --*.http-config-file loads it, unknown keys refused.
func TestDocHTTPConfigExamples(t *testing.T) {
	top := regexp.MustCompile(`(?m)^(tls_config|authorization|basic_auth|oauth2|http_headers|proxy_url):`)
	for _, b := range testenv.DocYAMLBlocks(t, filepath.Join("..", ".."), top) {
		path := filepath.Join(t.TempDir(), "http.yml")
		if err := os.WriteFile(path, []byte(b.YAML), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, _, err := config.LoadHTTPConfigFile(path); err != nil {
			t.Errorf("%s: the HTTP client config example does not load: %v\n%s", b.File, err, b.YAML)
		}
	}
}
