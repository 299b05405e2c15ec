package promserver

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/grafana/regexp"
	remoteapi "github.com/prometheus/client_golang/exp/api/remote"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/common/route"
	"github.com/prometheus/prometheus/config"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/scrape"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb"
	"github.com/prometheus/prometheus/util/notifications"
	apiv1 "github.com/prometheus/prometheus/web/api/v1"

	"github.com/joulemark/joulemark/internal/version"
)

// handler mounts Prometheus' own web/api/v1 under /api/v1, plus the
// /-/healthy and /-/ready probes and the server's own /metrics.
func (s *Server) handler() http.Handler {
	var (
		appendable storage.AppendableV2
		queryable  storage.SampleAndChunkQueryable = s.db
		exemplars  storage.ExemplarQueryable       = s.db
		stats      apiv1.TSDBAdminStats            = adminStats{s.db, s.dbStats}
	)
	if s.ro != nil {
		queryable, exemplars, stats = s.ro, s.ro, readOnlyAdminStats{s.ro}
	}
	if !s.opts.DisableRemoteWrite {
		appendable = s.db
	}
	host, _, _ := net.SplitHostPort(s.ln.Addr().String())
	api := apiv1.NewAPI(
		s.engine,
		queryable,
		appendable,
		exemplars,
		func(context.Context) apiv1.ScrapePoolsRetriever { return s.targets() },
		func(context.Context) apiv1.TargetRetriever { return s.targets() },
		func(context.Context) apiv1.AlertmanagerRetriever { return noAlertmanagers{} },
		func() config.Config { return *s.cfg },
		s.flags(),
		apiv1.GlobalURLOptions{ListenAddress: s.ln.Addr().String(), Host: host, Scheme: "http"},
		func(f http.HandlerFunc) http.HandlerFunc { return f },
		stats,
		s.opts.Dir,
		false, // admin API
		false, // search API
		0,
		s.log.With("component", "api"),
		func(context.Context) apiv1.RulesRetriever { return s.ruleGroups() },
		5e7, // remote read sample limit, as Prometheus
		10,  // remote read concurrency, as Prometheus
		1048576,
		false,                           // agent
		regexp.MustCompile(`^(?s:.*)$`), // CORS: any origin, as Prometheus by default
		s.runtimeInfo,
		buildInfo(),
		func() []notifications.Notification { return nil },
		func() (<-chan notifications.Notification, func(), bool) { return nil, func() {}, false },
		s.reg,
		s.reg,
		nil,
		!s.opts.DisableRemoteWrite,
		remoteapi.MessageTypes{remoteapi.WriteV1MessageType, remoteapi.WriteV2MessageType},
		false, false, false, // OTLP
		s.opts.LookbackDelta,
		false, // type and unit labels
		false, // append metadata
		nil,
		nil,
		apiv1.OpenAPIOptions{ExternalURL: s.url, Version: buildInfo().Version},
		nil, // default PromQL parser
		false,
		s.opts.QueryTimeout,
	)
	router := route.New()
	api.Register(router.WithPrefix("/api/v1"))
	router.Get("/metrics", promhttp.HandlerFor(s.reg, promhttp.HandlerOpts{ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelWarn)}).ServeHTTP)
	router.Get("/-/healthy", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("Prometheus Server is Healthy.\n"))
	})
	router.Get("/-/ready", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("Prometheus Server is Ready.\n"))
	})
	return router
}

// flags are what /api/v1/status/flags shows.
func (s *Server) flags() map[string]string {
	return map[string]string{
		"storage.tsdb.path":                s.opts.Dir,
		"storage.tsdb.retention.time":      s.opts.Retention.String(),
		"storage.tsdb.out_of_order_window": s.opts.OutOfOrderWindow.String(),
		"web.listen-address":               s.opts.ListenAddress,
		"web.enable-remote-write-receiver": strconv.FormatBool(!s.opts.DisableRemoteWrite),
		"storage.writable":                 strconv.FormatBool(!s.opts.ReadOnly),
		"query.lookback-delta":             s.opts.LookbackDelta.String(),
		"query.timeout":                    s.opts.QueryTimeout.String(),
		"query.max-samples":                strconv.Itoa(s.opts.MaxSamples),
	}
}

func (s *Server) runtimeInfo() (apiv1.RuntimeInfo, error) {
	cwd, _ := os.Getwd()
	host, _ := os.Hostname()
	retention := "unlimited"
	if s.opts.Retention > 0 {
		retention = s.opts.Retention.String()
	}
	return apiv1.RuntimeInfo{
		StartTime:           s.start,
		CWD:                 cwd,
		Hostname:            host,
		ServerTime:          time.Now(),
		ReloadConfigSuccess: true,
		LastConfigTime:      s.start,
		GoroutineCount:      runtime.NumGoroutine(),
		GOMAXPROCS:          runtime.GOMAXPROCS(0),
		GOGC:                os.Getenv("GOGC"),
		GODEBUG:             os.Getenv("GODEBUG"),
		StorageRetention:    retention,
	}, nil
}

// buildInfo reports the Prometheus release whose code serves the API (module
// v0.316.x is Prometheus 3.16.x) so that clients such as Grafana pick the right
// features, and joulemark's own version as the revision.
func buildInfo() *apiv1.PrometheusVersion {
	v := "3.0.0"
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, m := range bi.Deps {
			if m.Path == "github.com/prometheus/prometheus" {
				v = promRelease(m.Version, v)
			}
		}
	}
	jv, rev, _ := version.Info()
	if rev == "" {
		rev = jv
	}
	return &apiv1.PrometheusVersion{
		Version:   v,
		Revision:  rev,
		Branch:    "joulemark-embedded",
		GoVersion: runtime.Version(),
	}
}

// promRelease maps a Go module version of github.com/prometheus/prometheus
// (v0.MMmm.p, e.g. v0.316.0) to its release (3.16.0).
func promRelease(mod, def string) string {
	parts := strings.Split(strings.TrimPrefix(mod, "v"), ".")
	if len(parts) != 3 || parts[0] != "0" {
		return def
	}
	mm, err := strconv.Atoi(parts[1])
	if err != nil || mm < 100 {
		return def
	}
	patch, _, _ := strings.Cut(parts[2], "-")
	return strconv.Itoa(mm/100) + "." + strconv.Itoa(mm%100) + "." + patch
}

// adminStats adapts *tsdb.DB to the TSDB status endpoints.
type adminStats struct {
	db    *tsdb.DB
	stats *tsdb.DBStats
}

func (a adminStats) CleanTombstones() error { return a.db.CleanTombstones() }
func (a adminStats) Delete(ctx context.Context, mint, maxt int64, ms ...*labels.Matcher) error {
	return a.db.Delete(ctx, mint, maxt, ms...)
}
func (a adminStats) Snapshot(dir string, withHead bool) error { return a.db.Snapshot(dir, withHead) }
func (a adminStats) Stats(name string, limit int) (*tsdb.Stats, error) {
	return a.db.Head().Stats(name, limit), nil
}
func (a adminStats) WALReplayStatus() (tsdb.WALReplayStatus, error) {
	return a.stats.Head.WALReplayStatus.GetWALReplayStatus(), nil
}
func (a adminStats) BlockMetas() ([]tsdb.BlockMeta, error) { return a.db.BlockMetas(), nil }

// noAlertmanagers: the embedded server sends no alerts anywhere.
type noAlertmanagers struct{}

func (noAlertmanagers) Alertmanagers() []*url.URL        { return nil }
func (noAlertmanagers) DroppedAlertmanagers() []*url.URL { return nil }

// targets is the scrape manager, or an empty target list without one.
func (s *Server) targets() targetRetriever {
	if s.scrape != nil {
		return s.scrape
	}
	return noTargets{}
}

type targetRetriever interface {
	apiv1.TargetRetriever
	apiv1.ScrapePoolsRetriever
}

var errNoScrapePool = errors.New("no such scrape pool")

type noTargets struct{}

func (noTargets) ScrapePools() []string                       { return nil }
func (noTargets) TargetsActive() map[string][]*scrape.Target  { return nil }
func (noTargets) TargetsDropped() map[string][]*scrape.Target { return nil }
func (noTargets) TargetsDroppedCounts() map[string]int        { return nil }
func (noTargets) ScrapePoolConfig(string) (*config.ScrapeConfig, error) {
	return nil, errNoScrapePool
}
