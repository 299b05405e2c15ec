package main

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/joulemark/joulemark/internal/promserver"
)

// TSDBCmd works on the embedded Prometheus data of earlier runs.
type TSDBCmd struct {
	Serve TSDBServeCmd `cmd:"" help:"Serve a run's TSDB (e.g. runs/<run_id>/tsdb) through the Prometheus HTTP API until interrupted, for analyze, curl or Grafana."`
}

// tsdbInUseWindow: a WAL written this recently by another process means
// the directory may be in use (promserver.InUse).
const tsdbInUseWindow = 5 * time.Minute

// TSDBServeCmd reopens a TSDB directory behind the Prometheus HTTP API.
type TSDBServeCmd struct {
	Data                string        `name:"storage.tsdb.path" required:"" placeholder:"DIR" help:"TSDB directory of a run (runs/<run_id>/tsdb)."`
	ListenAddress       string        `name:"web.listen-address" default:"127.0.0.1:9090" help:"Address of the HTTP API."`
	Force               bool          `name:"storage.force" help:"With --storage.writable: open the directory even when another process seems to hold it (its Prometheus lock file is locked, or its WAL was written in the last 5 minutes by something else)."`
	Writable            bool          `name:"storage.writable" help:"Open the TSDB read-write (a lock file, WAL segments; needed by --web.enable-remote-write-receiver). By default it is opened read-only and nothing is written into the saved run."`
	RemoteWriteReceiver bool          `name:"web.enable-remote-write-receiver" help:"Also accept remote write at /api/v1/write (needs --storage.writable)."`
	OutOfOrderWindow    time.Duration `name:"storage.tsdb.out-of-order-window" default:"24h" help:"How far behind the newest sample a written sample may be."`
	LookbackDelta       time.Duration `name:"query.lookback-delta" default:"5m" help:"PromQL lookback delta."`
	QueryTimeout        time.Duration `name:"query.timeout" default:"2m" help:"Timeout of one query."`
}

// Run serves the TSDB until Ctrl-C or SIGTERM.
func (c *TSDBServeCmd) Run(ctx context.Context, g *Globals) error {
	opts, err := c.options(g.Logger())
	if err != nil {
		return err
	}
	s, err := promserver.Start(ctx, opts)
	if err != nil {
		return err
	}
	fmt.Printf("Serving %s at %s (Prometheus HTTP API; Ctrl-C to stop)\n", c.Data, s.URL())
	<-ctx.Done()
	return s.Close()
}

// options checks the flags and the data directory: read-only unless
// --storage.writable.
func (c *TSDBServeCmd) options(log *slog.Logger) (promserver.Options, error) {
	if err := promserver.CheckDataDir(c.Data); err != nil {
		return promserver.Options{}, err
	}
	if c.RemoteWriteReceiver && !c.Writable {
		return promserver.Options{}, fmt.Errorf("--web.enable-remote-write-receiver writes into %s: add --storage.writable", c.Data)
	}
	if c.Writable && !c.Force {
		why, err := promserver.InUse(c.Data, tsdbInUseWindow, time.Now())
		if err != nil {
			return promserver.Options{}, err
		}
		if why != "" {
			return promserver.Options{}, fmt.Errorf("--storage.writable: %s is in use: %s; stop that process first (writing under it corrupts its data), or pass --storage.force", c.Data, why)
		}
	}
	return promserver.Options{
		Dir:                c.Data,
		ListenAddress:      c.ListenAddress,
		OutOfOrderWindow:   c.OutOfOrderWindow,
		LookbackDelta:      c.LookbackDelta,
		QueryTimeout:       c.QueryTimeout,
		DisableRemoteWrite: !c.RemoteWriteReceiver,
		ReadOnly:           !c.Writable,
		Logger:             log,
	}, nil
}
