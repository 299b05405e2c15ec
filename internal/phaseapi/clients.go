package phaseapi

import (
	"fmt"
	"net/http"
	"time"

	"github.com/prometheus/common/config"
)

// Clients makes the phase API clients of a set of exporters: one HTTP
// client and one token. The token goes as a bearer token, or in
// TokenHeader when the HTTP client configuration takes the Authorization
// header itself (authorization, bearer token, basic_auth, oauth2).
type Clients struct {
	http   *http.Client
	token  string
	header bool
	// Authenticated is false when neither a token nor an authorization
	// section will reach the exporters.
	Authenticated bool
}

// NewClients builds the exporters' HTTP client from hc (TLS, auth), named
// userAgent, with timeout on each request. httpClient, when not nil,
// replaces the client hc would build; the token's header still follows hc.
func NewClients(hc config.HTTPClientConfig, token, userAgent string, timeout time.Duration, httpClient *http.Client) (*Clients, error) {
	if httpClient == nil {
		c, err := config.NewClientFromConfig(hc, userAgent)
		if err != nil {
			return nil, fmt.Errorf("phase API HTTP client: %w", err)
		}
		c.Timeout = timeout
		httpClient = c
	}
	return &Clients{http: httpClient, token: token, header: takesAuthorization(hc),
		Authenticated: token != "" || hc.Authorization != nil}, nil
}

// takesAuthorization reports whether hc sets the Authorization header.
func takesAuthorization(hc config.HTTPClientConfig) bool {
	return hc.Authorization != nil || hc.BearerToken != "" || hc.BearerTokenFile != "" ||
		hc.BasicAuth != nil || hc.OAuth2 != nil
}

// TokenInHeader reports whether the token goes in TokenHeader.
func (c *Clients) TokenInHeader() bool { return c.header }

// Client is the phase API client of the exporter at url.
func (c *Clients) Client(url string) (*Client, error) {
	cl, err := NewClient(url, c.token, c.http)
	if err == nil && c.header {
		cl.WithTokenHeader()
	}
	return cl, err
}
