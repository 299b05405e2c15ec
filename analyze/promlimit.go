package analyze

import (
	"fmt"
	"io"
	"net/http"

	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/config"

	"github.com/joulemark/joulemark/internal/remoteread"
	"github.com/joulemark/joulemark/internal/secretfile"
)

// MaxPrometheusResponse is the most bytes analyze reads of one Prometheus
// query answer: the client buffers an answer whole, so a larger one (a
// proxy gone wrong, a selector matching far more than a run) is an error
// naming the query and the limit, not hundreds of MB of memory. Raw
// series are read in windows (loader.readSeries), which keeps a run's answers
// far below it.
const MaxPrometheusResponse = 128 << 20

// errResponseTooLarge is a Prometheus answer over MaxPrometheusResponse.
var errResponseTooLarge = fmt.Errorf("the answer exceeds %d MiB (analyze's limit on one Prometheus answer)", MaxPrometheusResponse>>20)

// limitResponses has every response body of rt end in errResponseTooLarge
// after max bytes.
type limitResponses struct {
	rt  http.RoundTripper
	max int64
}

// RoundTrip refuses a declared length over the limit at once and caps the
// body otherwise.
func (l limitResponses) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := l.rt.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	if resp.ContentLength > l.max {
		resp.Body.Close()
		return nil, errResponseTooLarge
	}
	resp.Body = &cappedBody{rc: resp.Body, left: l.max}
	return resp, nil
}

// cappedBody reads at most left bytes, then fails.
type cappedBody struct {
	rc   io.ReadCloser
	left int64
}

func (b *cappedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		// One byte more tells a body of exactly the limit from a longer one.
		var one [1]byte
		if n, err := b.rc.Read(one[:]); n > 0 {
			return 0, errResponseTooLarge
		} else if err != nil {
			return 0, err
		}
		return 0, nil
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *cappedBody) Close() error { return b.rc.Close() }

// limitClient caps the answers hc reads at max bytes
// (MaxPrometheusResponse when 0).
func limitClient(hc *http.Client, max int64) *http.Client {
	if max <= 0 {
		max = MaxPrometheusResponse
	}
	rt := hc.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	c := *hc
	c.Transport = limitResponses{rt: rt, max: max}
	return &c
}

// promClients are cfg's Prometheus clients: the query API, its answers
// bounded in size, and the remote read client (nil when cfg.ReadAPI is
// remoteread.Query).
func promClients(cfg Config) (v1.API, *remoteread.Reader, error) {
	hc, err := config.NewClientFromConfig(cfg.HTTP, "joulemark-analyze")
	if err != nil {
		return nil, nil, fmt.Errorf("prometheus HTTP client: %w", err)
	}
	client, err := api.NewClient(api.Config{Address: cfg.PrometheusURL, Client: limitClient(hc, cfg.maxResponse)})
	if err != nil {
		return nil, nil, fmt.Errorf("prometheus client for %s: %w", secretfile.RedactURL(cfg.PrometheusURL), err)
	}
	if cfg.ReadAPI == remoteread.Query {
		return v1.NewAPI(client), nil, nil
	}
	rr, err := remoteread.New(cfg.PrometheusURL, cfg.HTTP, cfg.QueryTimeout)
	if err != nil {
		return nil, nil, err
	}
	return v1.NewAPI(client), rr, nil
}
