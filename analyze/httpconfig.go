package analyze

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/prometheus/common/config"
)

// ClientAuth is how to reach a protected Prometheus (or Mimir, Thanos,
// Cortex). Secrets are read from files by the HTTP client, never kept here.
type ClientAuth struct {
	BearerTokenFile   string
	BasicUser         string
	BasicPasswordFile string
	TLSCA             string // CA file
	TLSCert           string // client certificate file
	TLSKey            string // client key file
	TLSServerName     string
	Headers           map[string]string // e.g. X-Scope-OrgID=tenant
}

// HTTPConfig turns the flags into a validated client configuration.
func (a ClientAuth) HTTPConfig() (config.HTTPClientConfig, error) {
	c := config.DefaultHTTPClientConfig
	if a.BearerTokenFile != "" {
		c.Authorization = &config.Authorization{Type: "Bearer", CredentialsFile: a.BearerTokenFile}
	}
	if a.BasicUser != "" || a.BasicPasswordFile != "" {
		if a.BasicUser == "" {
			return c, fmt.Errorf("a basic-auth password file needs a basic-auth user")
		}
		c.BasicAuth = &config.BasicAuth{Username: a.BasicUser, PasswordFile: a.BasicPasswordFile}
	}
	c.TLSConfig = config.TLSConfig{CAFile: a.TLSCA, CertFile: a.TLSCert, KeyFile: a.TLSKey, ServerName: a.TLSServerName}
	if len(a.Headers) > 0 {
		h := map[string]config.Header{}
		for k, v := range a.Headers {
			name := http.CanonicalHeaderKey(strings.TrimSpace(k))
			if name == "" {
				return c, fmt.Errorf("header %q=%q: empty name", k, v)
			}
			h[name] = config.Header{Values: []string{v}}
		}
		c.HTTPHeaders = &config.Headers{Headers: h}
	}
	if err := c.Validate(); err != nil {
		return c, fmt.Errorf("prometheus client: %w", err)
	}
	return c, nil
}
