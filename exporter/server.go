package exporter

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/exporter-toolkit/web"

	"github.com/joulemark/joulemark/internal/version"
)

// Handler serves /metrics, the phase API, /api/v1/gpus, /healthz, /-/ready
// and a landing page.
func (e *Exporter) Handler() http.Handler {
	mux := http.NewServeMux()
	requests, scrape := e.apiRequests, e.scrapeDuration
	route := func(pattern, name string, h http.HandlerFunc) {
		mux.Handle(pattern, promhttp.InstrumentHandlerCounter(requests.MustCurryWith(prometheus.Labels{"handler": name}), h))
	}
	mux.Handle("GET /metrics", promhttp.InstrumentHandlerDuration(scrape, newMetricsHandler(e)))
	route("POST /api/v1/runs/{run_id}/phases/{phase}", "/api/v1/runs/{run_id}/phases/{phase}", e.handleStartPhase)
	route("POST /api/v1/runs/{run_id}/end", "/api/v1/runs/{run_id}/end", e.handleEndRun)
	route("POST /api/v1/runs/{run_id}/engine-exited", "/api/v1/runs/{run_id}/engine-exited", e.handleEngineExited)
	route("GET /api/v1/runs/{run_id}", "/api/v1/runs/{run_id}", e.handleRun)
	route("GET /api/v1/gpus", "/api/v1/gpus", e.handleGPUs)
	route("GET /api/v1/preflight", "/api/v1/preflight", e.handlePreflight)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if st := e.Stalled(); len(st) > 0 {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = fmt.Fprintf(w, "Unhealthy: the reads of GPU(s) %v have not returned for %d sampling intervals (a hung driver call?)\n", st, stallIntervals)
			return
		}
		_, _ = fmt.Fprintln(w, "Healthy")
	})
	mux.HandleFunc("GET /-/ready", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		select {
		case <-e.ready:
			_, _ = fmt.Fprintln(w, "Ready")
		default:
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = fmt.Fprintln(w, "Not ready: sampling has not started")
		}
	})
	landing, err := web.NewLandingPage(web.LandingConfig{
		Name:        "joulemark exporter",
		Description: "High-rate GPU power, energy counters and lifecycle phase markers",
		Version:     version.String(),
		Links: []web.LandingLinks{
			{Address: "/metrics", Text: "Metrics"},
			{Address: "/api/v1/gpus", Text: "GPUs"},
			{Address: "/healthz", Text: "Health"},
		},
	})
	if err == nil {
		mux.Handle("GET /{$}", landing)
	}
	return mux
}

// Deadlines of every request: its headers, and its headers and body (the
// phase API's bodies are 64 KiB at most), so a client trickling bytes
// holds a connection this long at most. Variables for tests.
var (
	readHeaderTimeout = 10 * time.Second
	readTimeout       = 30 * time.Second
)

type slogErrorLog struct{ e *Exporter }

func (l slogErrorLog) Println(v ...any) { l.e.log.Error("serving /metrics", "err", fmt.Sprint(v...)) }

// Listen checks the exporter-toolkit web config (TLS, basic auth; "" for
// none) and binds listenAddress: Main calls it before the exporter starts,
// so one that cannot serve writes no state.
func Listen(listenAddress, webConfigFile string) (net.Listener, error) {
	if webConfigFile != "" {
		if err := web.Validate(webConfigFile); err != nil {
			return nil, fmt.Errorf("web config %s: %w", webConfigFile, err)
		}
	}
	ln, err := net.Listen("tcp", listenAddress)
	if err != nil {
		return nil, fmt.Errorf("serving on %s: %w", listenAddress, err)
	}
	return ln, nil
}

// Serve listens on listenAddress with the exporter-toolkit web config
// (TLS, basic auth; "" for none) and serves Handler until ctx ends, then shuts
// down gracefully.
func (e *Exporter) Serve(ctx context.Context, listenAddress, webConfigFile string) error {
	ln, err := Listen(listenAddress, webConfigFile)
	if err != nil {
		return err
	}
	return e.ServeOn(ctx, ln, webConfigFile)
}

// ServeOn serves Handler on ln (from Listen) until ctx ends, then shuts
// down gracefully; ln is closed.
func (e *Exporter) ServeOn(ctx context.Context, ln net.Listener, webConfigFile string) error {
	listenAddress := ln.Addr().String()
	srv := &http.Server{Handler: e.Handler(), ReadHeaderTimeout: readHeaderTimeout, ReadTimeout: readTimeout,
		WriteTimeout: time.Minute, IdleTimeout: 2 * time.Minute}
	addrs := []string{listenAddress}
	systemd := false
	flags := &web.FlagConfig{WebListenAddresses: &addrs, WebSystemdSocket: &systemd, WebConfigFile: &webConfigFile}
	errc := make(chan error, 1)
	go func() { errc <- web.Serve(ln, srv, flags, e.log) }()
	select {
	case err := <-errc:
		_ = ln.Close()
		return fmt.Errorf("serving on %s: %w", listenAddress, err)
	case <-ctx.Done():
	}
	e.log.Info("shutting down", "listen", listenAddress)
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		// Connections still busy (or dialled and never used) after the
		// grace period are cut; the sampler state is not at stake.
		e.log.Warn("connections still open after the grace period; closing them", "listen", listenAddress, "err", err)
		_ = srv.Close()
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serving on %s: %w", listenAddress, err)
	}
	return nil
}
