// Package clientflags holds the command-line flags of the remote parties
// joulemark talks to: the exporters' phase API, a remote-write target and
// Prometheus. Each party is one struct, embedded in a command with the kong
// prefix of the party (docs/cli.md):
//
//	Exporter    clientflags.Exporter    `embed:"" prefix:"exporter."`
//	RemoteWrite clientflags.RemoteWrite `embed:"" prefix:"remote-write."`
//	Prometheus  clientflags.Prometheus  `embed:"" prefix:"prometheus."`
//	Target      clientflags.Target      `embed:"" prefix:"target."`
//
// Each gives a URL flag, --<party>.http-config-file (prometheus/common's HTTP
// client configuration file, the one promtool and amtool take) and one
// shortcut, --<party>.bearer-token-file (the engine: --target.api-key-file),
// and produces a validated
// config.HTTPClientConfig. Secrets stay in the files the configuration names.
package clientflags

import (
	"fmt"

	"github.com/prometheus/common/config"

	"github.com/joulemark/joulemark/internal/secretfile"
)

// Kong prefixes of the parties; errors name flags with them.
const (
	ExporterPrefix    = "exporter."
	RemoteWritePrefix = "remote-write."
	PrometheusPrefix  = "prometheus."
	TargetPrefix      = "target."
)

// TokenEnv holds the exporters' phase API token when no token file is given
// (a documented alias kept from earlier releases).
const TokenEnv = "JOULEMARK_API_TOKEN"

// HTTP is the client configuration of one party: a prometheus/common HTTP
// client config file and a bearer token file.
type HTTP struct {
	ConfigFile      string `name:"http-config-file" type:"existingfile" placeholder:"FILE" help:"HTTP client config file for ${party}: authorization, basic_auth, tls_config, proxy_url, http_headers (e.g. X-Scope-OrgID), as promtool takes."`
	BearerTokenFile string `name:"bearer-token-file" type:"existingfile" placeholder:"FILE" help:"File holding the bearer token for ${party}${token_env}."`
}

// base is the configuration of the file, or the default.
func (h HTTP) base(prefix string) (config.HTTPClientConfig, error) {
	c := config.DefaultHTTPClientConfig
	if h.ConfigFile == "" {
		return c, nil
	}
	fc, _, err := config.LoadHTTPConfigFile(h.ConfigFile)
	if err != nil {
		return c, fmt.Errorf("--%shttp-config-file %s: %w", prefix, h.ConfigFile, err)
	}
	return *fc, nil
}

// AuthSection names the authentication section of c: "authorization"
// (bearer_token and bearer_token_file included), "basic_auth", "oauth2", or
// "" without one.
func AuthSection(c config.HTTPClientConfig) string {
	switch {
	case c.Authorization != nil || c.BearerToken != "" || c.BearerTokenFile != "":
		return "authorization"
	case c.BasicAuth != nil:
		return "basic_auth"
	case c.OAuth2 != nil:
		return "oauth2"
	}
	return ""
}

// config builds the party's configuration with the bearer token file as
// its authorization.
func (h HTTP) config(prefix string) (config.HTTPClientConfig, error) {
	c, err := h.base(prefix)
	if err != nil {
		return c, err
	}
	if h.BearerTokenFile != "" {
		if a := AuthSection(c); a != "" {
			return c, fmt.Errorf("--%sbearer-token-file conflicts with %s in %s: give one", prefix, a, h.source(prefix))
		}
		c.Authorization = &config.Authorization{Type: "Bearer", CredentialsFile: h.BearerTokenFile}
	}
	return c, validate(c, prefix)
}

// source names where the configuration came from, for errors.
func (h HTTP) source(prefix string) string {
	return "--" + prefix + "http-config-file " + h.ConfigFile
}

func validate(c config.HTTPClientConfig, prefix string) error {
	if err := c.Validate(); err != nil {
		return fmt.Errorf("--%s* HTTP client settings: %w", prefix, err)
	}
	return nil
}

// Exporter is how to reach the exporters' phase API. The bearer token is
// the phase API token: it goes in the Authorization header, or in
// X-Joulemark-Token when the HTTP client config takes that header (basic
// auth for an exporter behind an exporter-toolkit web config).
type Exporter struct {
	URLs []string `name:"url" placeholder:"URL" help:"Exporter base URL, e.g. http://gpu-node:9402 (repeatable, one per node)."`
	HTTP HTTP     `embed:"" set:"party=the exporters' phase API" kong:"set='token_env= (else env JOULEMARK_API_TOKEN)'"`
}

// HTTPConfig is the exporters' HTTP client configuration; the token is not
// in it (see Token).
func (e Exporter) HTTPConfig() (config.HTTPClientConfig, error) {
	c, err := e.HTTP.base(ExporterPrefix)
	if err != nil {
		return c, err
	}
	if e.HTTP.BearerTokenFile != "" && AuthSection(c) == "authorization" {
		return c, fmt.Errorf("--%sbearer-token-file conflicts with authorization in %s: give one", ExporterPrefix, e.HTTP.source(ExporterPrefix))
	}
	return c, validate(c, ExporterPrefix)
}

// Token is the phase API token: the bearer token file's content, else
// nothing when the HTTP client config carries an authorization, else env
// JOULEMARK_API_TOKEN. It may be empty.
func (e Exporter) Token() (string, error) {
	c, err := e.HTTPConfig()
	if err != nil {
		return "", err
	}
	if f := e.HTTP.BearerTokenFile; f != "" {
		return ReadSecret(f, "--"+ExporterPrefix+"bearer-token-file")
	}
	if AuthSection(c) == "authorization" {
		return "", nil
	}
	return secretfile.Env(TokenEnv)
}

// RemoteWrite is where samples are pushed (Prometheus remote write).
type RemoteWrite struct {
	URL  string `name:"url" placeholder:"URL" help:"Remote-write endpoint, e.g. http://prometheus:9090/api/v1/write (empty: nothing is pushed)."`
	HTTP HTTP   `embed:"" set:"party=the remote-write endpoint" kong:"set='token_env='"`
}

// HTTPConfig is the remote-write HTTP client configuration.
func (r RemoteWrite) HTTPConfig() (config.HTTPClientConfig, error) {
	return r.HTTP.config(RemoteWritePrefix)
}

// Prometheus is the Prometheus (or Mimir, Thanos, Cortex) that is queried.
type Prometheus struct {
	URL  string `name:"url" placeholder:"URL" help:"Prometheus base URL (the HTTP query API), e.g. http://localhost:9090."`
	HTTP HTTP   `embed:"" set:"party=Prometheus" kong:"set='token_env='"`
}

// HTTPConfig is the Prometheus HTTP client configuration.
func (p Prometheus) HTTPConfig() (config.HTTPClientConfig, error) {
	return p.HTTP.config(PrometheusPrefix)
}

// Target is how to reach the engine under test (its OpenAI-compatible
// API), embedded with prefix "target.": the HTTP client config file and
// one shortcut, the API key file (else env OPENAI_API_KEY, read by
// benchjob). The engine client (package openai) applies tls_config,
// authorization, basic_auth, http_headers and the proxy settings; oauth2
// is not supported there.
type Target struct {
	ConfigFile string `name:"http-config-file" type:"existingfile" placeholder:"FILE" help:"HTTP client config file for the engine: tls_config, authorization, basic_auth, http_headers (e.g. X-Scope-OrgID), proxy_url, as promtool takes (no oauth2)."`
	APIKeyFile string `name:"api-key-file" type:"existingfile" placeholder:"FILE" help:"File with the engine's API key, sent as a bearer token (else env OPENAI_API_KEY)."`
}

// HTTPConfig is the engine's HTTP client configuration: the file's, or the
// default. The API key is not in it (benchjob reads --target.api-key-file
// or OPENAI_API_KEY); giving the key file with an authorization,
// basic_auth or oauth2 section in the file is an error naming both.
func (t Target) HTTPConfig() (config.HTTPClientConfig, error) {
	c := config.DefaultHTTPClientConfig
	if t.ConfigFile != "" {
		fc, _, err := config.LoadHTTPConfigFile(t.ConfigFile)
		if err != nil {
			return c, fmt.Errorf("--%shttp-config-file %s: %w", TargetPrefix, t.ConfigFile, err)
		}
		c = *fc
	}
	if a := AuthSection(c); a != "" && t.APIKeyFile != "" {
		return c, fmt.Errorf("--%sapi-key-file conflicts with %s in --%shttp-config-file %s: give one", TargetPrefix, a, TargetPrefix, t.ConfigFile)
	}
	return c, validate(c, TargetPrefix)
}

// ReadSecret reads a one-line secret (a token, an API key) from file; flag
// names the flag that gave the file, for errors. The secret never appears
// in errors.
func ReadSecret(file, flag string) (string, error) {
	return secretfile.ReadToken(file, flag)
}
