package clientflags

import (
	"fmt"
	"net/http"
	"time"

	"github.com/prometheus/common/config"

	"github.com/joulemark/joulemark/internal/phaseapi"
)

// PhaseClients makes the phase API clients of the exporters: one HTTP
// client (the flags' configuration, each request bounded by a timeout) and
// the token, in X-Joulemark-Token when the configuration takes the
// Authorization header (TokenHeader).
type PhaseClients struct {
	http   *http.Client
	token  string
	header bool
	// Authenticated is false when neither a token nor an authorization
	// section will reach the exporters.
	Authenticated bool
}

// PhaseClients builds the exporters' HTTP client, named userAgent, with
// timeout on each request.
func (e Exporter) PhaseClients(userAgent string, timeout time.Duration) (*PhaseClients, error) {
	hc, err := e.HTTPConfig()
	if err != nil {
		return nil, err
	}
	token, err := e.Token()
	if err != nil {
		return nil, err
	}
	c, err := config.NewClientFromConfig(hc, userAgent)
	if err != nil {
		return nil, fmt.Errorf("--%s* HTTP client: %w", ExporterPrefix, err)
	}
	c.Timeout = timeout
	return &PhaseClients{http: c, token: token, header: AuthSection(hc) != "",
		Authenticated: token != "" || hc.Authorization != nil}, nil
}

// Client is the phase API client of the exporter at url.
func (p *PhaseClients) Client(url string) (*phaseapi.Client, error) {
	c, err := phaseapi.NewClient(url, p.token, p.http)
	if err == nil && p.header {
		c.WithTokenHeader()
	}
	return c, err
}
