package clientflags

import (
	"fmt"
	"time"

	"github.com/joulemark/joulemark/internal/phaseapi"
)

// PhaseClients builds the exporters' phase API clients from the flags:
// their HTTP client, named userAgent, with timeout on each request, and
// the token.
func (e Exporter) PhaseClients(userAgent string, timeout time.Duration) (*phaseapi.Clients, error) {
	hc, err := e.HTTPConfig()
	if err != nil {
		return nil, err
	}
	token, err := e.Token()
	if err != nil {
		return nil, err
	}
	c, err := phaseapi.NewClients(hc, token, userAgent, timeout, nil)
	if err != nil {
		return nil, fmt.Errorf("--%s*: %w", ExporterPrefix, err)
	}
	return c, nil
}
