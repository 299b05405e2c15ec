// Package promserver is joulemark's embedded Prometheus: an in-process TSDB
// (out-of-order writes enabled) behind Prometheus' own HTTP query API
// (web/api/v1), with a remote-write receiver at /api/v1/write, a scrape
// manager for /metrics targets and a rule manager for recording and alerting
// rules. Anything that speaks to a Prometheus (client_golang's api/prometheus/v1,
// curl, Grafana, remote-write clients) works against it unchanged.
package promserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/prometheus/config"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/rules"
	"github.com/prometheus/prometheus/scrape"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb"
)

// Server is a running embedded Prometheus.
type Server struct {
	opts  Options
	log   *slog.Logger
	start time.Time

	reg     *prometheus.Registry
	db      *tsdb.DB // nil when read-only
	dbStats *tsdb.DBStats
	ro      *readOnlyStore // set when read-only
	engine  *promql.Engine
	cfg     *config.Config

	scrape     *scrape.Manager
	scrapeDone chan struct{}
	rules      *rules.Manager
	rulesDone  chan struct{}

	ln   net.Listener
	http *http.Server
	url  string

	cancel    context.CancelFunc
	wg        sync.WaitGroup
	closeOnce sync.Once
	closeErr  error
}

// Start validates opts, opens (or creates) the TSDB under opts.Dir and starts
// the HTTP API, the scrapes and the rule evaluation. Cancelling ctx closes the
// server as Close does; Close must still be called to learn the outcome.
func Start(ctx context.Context, opts Options) (*Server, error) {
	targets, err := opts.validate()
	if err != nil {
		return nil, err
	}
	cfg, err := buildConfig(opts, targets)
	if err != nil {
		return nil, fmt.Errorf("embedded prometheus: %w", err)
	}
	loader := newRuleLoader(opts.RuleSources, opts.Logger.With("component", "rule loader"))
	ruleIDs, err := loader.validate(opts.RuleFiles)
	if err != nil {
		return nil, fmt.Errorf("embedded prometheus: %w", err)
	}

	s := &Server{opts: opts, log: opts.Logger, start: time.Now(), reg: prometheus.NewRegistry(), cfg: cfg}
	ctx, s.cancel = context.WithCancel(ctx)
	ok := false
	defer func() {
		if !ok {
			s.cancel()
			_ = s.shutdown()
		}
	}()

	if err := s.openDB(); err != nil {
		return nil, err
	}
	s.engine = promql.NewEngine(promql.EngineOpts{
		Logger:               s.log.With("component", "query engine"),
		Reg:                  s.reg,
		MaxSamples:           opts.MaxSamples,
		Timeout:              opts.QueryTimeout,
		LookbackDelta:        opts.LookbackDelta,
		EnableAtModifier:     true,
		EnableNegativeOffset: true,
		NoStepSubqueryIntervalFn: func(int64) int64 {
			return opts.EvaluationInterval.Milliseconds()
		},
	})

	if err := s.listen(); err != nil {
		return nil, err
	}
	if len(targets) > 0 {
		if err := s.startScrape(cfg, targets); err != nil {
			return nil, err
		}
	}
	if len(ruleIDs) > 0 {
		if err := s.startRules(ctx, loader, ruleIDs); err != nil {
			return nil, err
		}
	}
	s.serve()

	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		<-ctx.Done()
		go s.Close() //nolint:errcheck // the outcome is reported by the caller's Close
	}()
	ok = true
	s.log.Info("embedded prometheus started", "url", s.url, "dir", opts.Dir,
		"scrape_targets", len(targets), "rule_files", len(ruleIDs), "out_of_order_window", opts.OutOfOrderWindow)
	return s, nil
}

func (s *Server) openDB() error {
	if s.opts.ReadOnly {
		if err := CheckDataDir(s.opts.Dir); err != nil {
			return fmt.Errorf("embedded prometheus: %w", err)
		}
		ro, err := openReadOnly(s.opts.Dir, s.log.With("component", "tsdb"))
		if err != nil {
			return err
		}
		s.ro = ro
		return nil
	}
	if err := os.MkdirAll(s.opts.Dir, 0o755); err != nil {
		return fmt.Errorf("embedded prometheus: data directory: %w", err)
	}
	o := tsdb.DefaultOptions()
	o.RetentionDuration = s.opts.Retention.Milliseconds()
	o.OutOfOrderTimeWindow = s.opts.OutOfOrderWindow.Milliseconds()
	o.MaxBlockDuration = 24 * time.Hour.Milliseconds()
	o.WALCompression = "snappy"
	s.dbStats = tsdb.NewDBStats()
	db, err := tsdb.Open(s.opts.Dir, s.log.With("component", "tsdb"), s.reg, o, s.dbStats)
	if err != nil {
		return fmt.Errorf("embedded prometheus: opening TSDB in %s: %w", s.opts.Dir, err)
	}
	s.db = db
	return nil
}

func (s *Server) listen() error {
	ln, err := net.Listen("tcp", s.opts.ListenAddress)
	if err != nil {
		return fmt.Errorf("embedded prometheus: listen on %s: %w", s.opts.ListenAddress, err)
	}
	s.ln = ln
	s.url = "http://" + ln.Addr().String()
	return nil
}

// serve starts the HTTP API; it comes last in Start, once every component
// the handlers read is in place.
func (s *Server) serve() {
	ln := s.ln
	s.http = &http.Server{
		Handler:           s.handler(),
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		if err := s.http.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("embedded prometheus: HTTP server stopped", "err", err)
		}
	}()
}

// URL is the base URL of the HTTP API, e.g. http://127.0.0.1:41234.
func (s *Server) URL() string { return s.url }

// RemoteWriteURL is where remote-write clients push samples.
func (s *Server) RemoteWriteURL() string { return s.url + "/api/v1/write" }

// DB is the underlying TSDB, for tests and loaders that write directly;
// nil when read-only.
func (s *Server) DB() *tsdb.DB { return s.db }

// Appender starts a TSDB transaction (Commit or Rollback it), for loaders
// that write without HTTP; AppendSamples is the simpler way. Not for a
// read-only server.
func (s *Server) Appender(ctx context.Context) storage.AppenderV2 { return s.db.AppenderV2(ctx) }

// Registry holds the server's own metrics (TSDB, engine, scrape, rules).
func (s *Server) Registry() *prometheus.Registry { return s.reg }

// Close takes a last scrape, stops scraping, rule evaluation and the HTTP
// API, and closes the TSDB (its WAL keeps the newest data for the next Open).
// It is safe to call more than once.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		s.cancel()
		s.closeErr = s.shutdown()
		s.wg.Wait()
		s.log.Info("embedded prometheus stopped", "dir", s.opts.Dir, "err", s.closeErr)
	})
	return s.closeErr
}

// shutdown stops whatever Start got running, in dependency order.
func (s *Server) shutdown() error {
	var errs []error
	if s.scrape != nil {
		s.scrape.Stop()
		<-s.scrapeDone
	}
	if s.rules != nil {
		s.rules.Stop()
		<-s.rulesDone
	}
	if s.http == nil && s.ln != nil {
		_ = s.ln.Close()
	}
	if s.http != nil {
		// Shutdown waits for in-flight queries. A client may also hold a
		// connection it dialled but never used (Go's transport dials ahead
		// under concurrency); the server counts such a connection as busy
		// for its first 5 s, so past the grace period the rest is closed
		// hard: nothing is lost, the TSDB closes below either way.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if err := s.http.Shutdown(ctx); err != nil {
			s.log.Warn("HTTP connections still open after the grace period; closing them", "err", err)
			_ = s.http.Close()
		}
		cancel()
	}
	if s.engine != nil {
		if err := s.engine.Close(); err != nil {
			errs = append(errs, fmt.Errorf("closing query engine: %w", err))
		}
	}
	if s.db != nil {
		if err := s.db.Close(); err != nil {
			errs = append(errs, fmt.Errorf("closing TSDB in %s: %w", s.opts.Dir, err))
		} else if err := markClosed(s.opts.Dir); err != nil {
			errs = append(errs, fmt.Errorf("closing TSDB in %s: %w", s.opts.Dir, err))
		}
	}
	if s.ro != nil {
		if err := s.ro.close(); err != nil {
			errs = append(errs, fmt.Errorf("closing read-only TSDB in %s: %w", s.opts.Dir, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("embedded prometheus: %w", err)
	}
	return nil
}
