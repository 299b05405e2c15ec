package main

import (
	"context"
	"log/slog"
	"os"
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

// TestTSDBServeWritableRefusesInUse: --storage.writable refuses a directory
// whose WAL another process wrote just now, unless --storage.force.
func TestTSDBServeWritableRefusesInUse(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tsdb")
	s, err := promserver.Start(context.Background(), promserver.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	if _, err := parseCLI(t, "tsdb", "serve", "--storage.tsdb.path", dir, "--storage.writable").TSDB.Serve.options(log); err != nil {
		t.Errorf("reopening what a joulemark server closed: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "wal", "00000042"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = parseCLI(t, "tsdb", "serve", "--storage.tsdb.path", dir, "--storage.writable").TSDB.Serve.options(log)
	if err == nil || !strings.Contains(err.Error(), "in use") || !strings.Contains(err.Error(), "--storage.force") {
		t.Errorf("WAL written by another process: %v, want refused naming --storage.force", err)
	}
	if _, err := parseCLI(t, "tsdb", "serve", "--storage.tsdb.path", dir, "--storage.writable", "--storage.force").TSDB.Serve.options(log); err != nil {
		t.Errorf("--storage.force: %v", err)
	}
	if _, err := parseCLI(t, "tsdb", "serve", "--storage.tsdb.path", dir).TSDB.Serve.options(log); err != nil {
		t.Errorf("read-only: %v", err)
	}
}
