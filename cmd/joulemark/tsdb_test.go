package main

import (
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/joulemark/joulemark/internal/promserver"
)

// TestTSDBServeReadOnlyByDefault: tsdb serve opens a saved run read-only
// unless --storage.writable, and remote write needs it.
func TestTSDBServeReadOnlyByDefault(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tsdb")
	s, err := promserver.Start(context.Background(), promserver.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	opts, err := parseCLI(t, "tsdb", "serve", "--storage.tsdb.path", dir).TSDB.Serve.options(log)
	if err != nil || !opts.ReadOnly || !opts.DisableRemoteWrite {
		t.Errorf("default: %+v %v, want read-only without remote write", opts, err)
	}
	opts, err = parseCLI(t, "tsdb", "serve", "--storage.tsdb.path", dir, "--storage.writable", "--web.enable-remote-write-receiver").TSDB.Serve.options(log)
	if err != nil || opts.ReadOnly || opts.DisableRemoteWrite {
		t.Errorf("--storage.writable with remote write: %+v %v", opts, err)
	}
	_, err = parseCLI(t, "tsdb", "serve", "--storage.tsdb.path", dir, "--web.enable-remote-write-receiver").TSDB.Serve.options(log)
	if err == nil || !strings.Contains(err.Error(), "--storage.writable") {
		t.Errorf("remote write without --storage.writable: %v", err)
	}
}
