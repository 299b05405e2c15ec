package demo

import (
	"context"
	"log/slog"
)

// quietHandler drops records below min: the embedded Prometheus' and the
// exporter's informational lines would bury the demo's own output. With the
// base logger at debug level everything passes.
type quietHandler struct {
	slog.Handler
	min slog.Level
}

func (q quietHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= q.min && q.Handler.Enabled(ctx, l)
}

func (q quietHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return quietHandler{q.Handler.WithAttrs(as), q.min}
}

func (q quietHandler) WithGroup(name string) slog.Handler {
	return quietHandler{q.Handler.WithGroup(name), q.min}
}

// quiet is log limited to warnings and errors unless it logs debug.
func quiet(log *slog.Logger) *slog.Logger {
	if log.Enabled(context.Background(), slog.LevelDebug) {
		return log
	}
	return slog.New(quietHandler{log.Handler(), slog.LevelWarn})
}
