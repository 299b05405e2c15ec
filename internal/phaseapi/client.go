package phaseapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/joulemark/joulemark/internal/contract"
	"github.com/joulemark/joulemark/internal/secretfile"
)

// APIError is a non-2xx answer from the exporter's phase API.
type APIError struct {
	Method     string
	URL        string
	StatusCode int
	Message    string
}

func (e *APIError) Error() string {
	return fmt.Sprintf("%s %s: %d %s: %s", e.Method, e.URL, e.StatusCode, http.StatusText(e.StatusCode), e.Message)
}

// TokenHeader carries the API token instead of "Authorization: Bearer" when
// the exporter's web config asks for basic auth, which takes the
// Authorization header. The exporter accepts the token in either.
const TokenHeader = "X-Joulemark-Token"

// Client talks to one exporter's phase API. The token is sent as a bearer
// token (or in TokenHeader, see WithTokenHeader) and never appears in errors.
type Client struct {
	base        string // requests go here (user info included)
	shown       string // base with the password redacted, for messages
	token       string
	http        *http.Client
	tokenHeader bool
}

// WithTokenHeader makes c send its token in TokenHeader, leaving the
// Authorization header to httpClient's transport (basic auth for an
// exporter behind an exporter-toolkit web config). It returns c.
func (c *Client) WithTokenHeader() *Client {
	c.tokenHeader = true
	return c
}

// NewClient returns a client for the exporter at baseURL (scheme, host and
// port, e.g. http://gpu-node:9402). httpClient may be nil; it is where TLS
// settings go.
func NewClient(baseURL, token string, httpClient *http.Client) (*Client, error) {
	u, err := url.Parse(baseURL)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return nil, fmt.Errorf("exporter URL %q: want scheme://host:port", secretfile.RedactURL(baseURL))
	}
	if httpClient == nil {
		httpClient = &http.Client{Timeout: 30 * time.Second}
	}
	base := strings.TrimRight(baseURL, "/")
	return &Client{base: base, shown: secretfile.RedactURL(base), token: token, http: httpClient}, nil
}

// BaseURL is the exporter this client talks to, its password redacted.
func (c *Client) BaseURL() string { return c.shown }

// StartPhase starts phase p of run runID, ending the previous phase at the
// same instant.
func (c *Client) StartPhase(ctx context.Context, runID string, p contract.Phase) (*RunStatus, error) {
	var st RunStatus
	err := c.do(ctx, http.MethodPost, "/api/v1/runs/"+url.PathEscape(runID)+"/phases/"+url.PathEscape(string(p)), &st)
	return &st, err
}

// StartPhaseSelect starts phase p of run runID like StartPhase; on the
// run's first phase a non-empty sel makes the run measure only the GPUs it
// names.
func (c *Client) StartPhaseSelect(ctx context.Context, runID string, p contract.Phase, sel Selector) (*RunStatus, error) {
	if sel.Empty() {
		return c.StartPhase(ctx, runID, p)
	}
	body, err := json.Marshal(sel)
	if err != nil {
		return nil, fmt.Errorf("encoding the GPU selector: %w", err)
	}
	var st RunStatus
	err = c.send(ctx, http.MethodPost, "/api/v1/runs/"+url.PathEscape(runID)+"/phases/"+url.PathEscape(string(p)), body, &st)
	return &st, err
}

// EngineExited reports that the engine process of run runID has exited
// (the bench controls it), which meets the release's process criterion.
func (c *Client) EngineExited(ctx context.Context, runID string) (*RunStatus, error) {
	var st RunStatus
	if err := c.do(ctx, http.MethodPost, "/api/v1/runs/"+url.PathEscape(runID)+"/engine-exited", &st); err != nil {
		return nil, err
	}
	return &st, nil
}

// EndRun closes run runID.
func (c *Client) EndRun(ctx context.Context, runID string) (*RunStatus, error) {
	var st RunStatus
	err := c.do(ctx, http.MethodPost, "/api/v1/runs/"+url.PathEscape(runID)+"/end", &st)
	return &st, err
}

// Run returns the state of run runID.
func (c *Client) Run(ctx context.Context, runID string) (*RunStatus, error) {
	var st RunStatus
	err := c.do(ctx, http.MethodGet, "/api/v1/runs/"+url.PathEscape(runID), &st)
	return &st, err
}

// GPUs returns the GPUs the exporter measures.
func (c *Client) GPUs(ctx context.Context) ([]GPUInfo, error) {
	var gpus []GPUInfo
	err := c.do(ctx, http.MethodGet, "/api/v1/gpus", &gpus)
	return gpus, err
}

// Preflight makes the exporter's authenticated no-op call: it proves the
// token (and TLS, basic auth) and, with a runID, that the exporter never saw
// that run id (else a 409 APIError). It returns the exporter's GPUs.
func (c *Client) Preflight(ctx context.Context, runID string) (*Preflight, error) {
	var pf Preflight
	path := "/api/v1/preflight"
	if runID != "" {
		path += "?run_id=" + url.QueryEscape(runID)
	}
	err := c.do(ctx, http.MethodGet, path, &pf)
	return &pf, err
}

// PreflightPod is Preflight that also resolves pod ("namespace/name" or
// "namespace/name-prefix*") as the first phase's selector would: a 422
// APIError when the exporter cannot (no kubelet allocations, none of its
// GPUs); Preflight.Pod is "" from an exporter too old to check. With
// wait (a lifecycle's engine starts later), a pod holding no GPU yet is
// no error: Preflight.PodPending says so.
func (c *Client) PreflightPod(ctx context.Context, runID, pod string, wait bool) (*Preflight, error) {
	var pf Preflight
	q := url.Values{}
	if runID != "" {
		q.Set("run_id", runID)
	}
	if pod != "" {
		q.Set("pod", pod)
	}
	if wait {
		q.Set("wait", "1")
	}
	err := c.do(ctx, http.MethodGet, "/api/v1/preflight?"+q.Encode(), &pf)
	return &pf, err
}

// WaitRelease polls run runID every poll until its release phase closed or
// timed out, or ctx ends.
func (c *Client) WaitRelease(ctx context.Context, runID string, poll time.Duration) (*RunStatus, error) {
	t := time.NewTicker(poll)
	defer t.Stop()
	for {
		st, err := c.Run(ctx, runID)
		if err != nil {
			return st, err
		}
		if st.Release.State == ReleaseClosed || st.Release.State == ReleaseTimedOut {
			return st, nil
		}
		select {
		case <-ctx.Done():
			return st, fmt.Errorf("waiting for release of run %s on %s: %w", runID, c.shown, ctx.Err())
		case <-t.C:
		}
	}
}

func (c *Client) do(ctx context.Context, method, path string, out any) error {
	return c.send(ctx, method, path, nil, out)
}

// send makes a request with an optional JSON body and decodes the answer.
func (c *Client) send(ctx context.Context, method, path string, reqBody []byte, out any) error {
	u := c.shown + path
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, bytes.NewReader(reqBody))
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, u, err)
	}
	if reqBody != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" && c.tokenHeader {
		req.Header.Set(TokenHeader, c.token)
	} else if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, u, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return fmt.Errorf("%s %s: reading answer: %w", method, u, err)
	}
	if resp.StatusCode/100 != 2 {
		var e Error
		msg := strings.TrimSpace(string(body))
		if json.Unmarshal(body, &e) == nil && e.Error != "" {
			msg = e.Error
		}
		return &APIError{Method: method, URL: u, StatusCode: resp.StatusCode, Message: msg}
	}
	if err := json.Unmarshal(body, out); err != nil {
		return fmt.Errorf("%s %s: decoding answer: %w", method, u, err)
	}
	return nil
}

// IsStatus reports whether err is an APIError with the given HTTP status.
func IsStatus(err error, code int) bool {
	var e *APIError
	return errors.As(err, &e) && e.StatusCode == code
}
