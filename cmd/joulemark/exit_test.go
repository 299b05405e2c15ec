package main

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// TestPanicExitsOne: a panic in a command exits 1 with its stack on
// stderr, never 2 (bad usage, Go's own status for a panic).
func TestPanicExitsOne(t *testing.T) {
	var stderr bytes.Buffer
	err := runCommand(&stderr, func() error { panic("injected bug") })
	if code := exitCode(err); code != exitFailed {
		t.Errorf("exit %d, want %d", code, exitFailed)
	}
	if !strings.Contains(err.Error(), "internal error (panic): injected bug") || !strings.Contains(stderr.String(), "goroutine") {
		t.Errorf("err %v, stderr %q", err, stderr.String())
	}
	if err := runCommand(&stderr, func() error { return errors.New("plain") }); exitCode(err) != exitFailed || err.Error() != "plain" {
		t.Errorf("plain error: %v", err)
	}
}

// TestInvalidRunIDIsBadUsage: a run id outside the grammar exits 2 in
// every command that takes one (analyze said 1, bench 2).
func TestInvalidRunIDIsBadUsage(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{
		{"analyze", "--run-id", "bad id!", "--out", dir + "/r", "--prometheus.url", "http://127.0.0.1:1"},
		{"bench", "--run-id", "bad id!", "--target", "http://127.0.0.1:1/v1", "--concurrency", "1", "--requests", "1", "--engine.no-lifecycle"},
		{"phase", "bad id!", "idle", "--exporter.url", "http://127.0.0.1:1"},
		{"runs", "finalize", "bad id!", "--runs-dir", dir},
		{"runs", "push", "bad id!", "--runs-dir", dir, "--remote-write.url", "http://127.0.0.1:1/api/v1/write"},
		{"demo", "--run-id", "../escape"},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(t.Context(), args, &stdout, &stderr); code != exitUsage || !strings.Contains(stderr.String(), "run id") {
			t.Errorf("%v: exit %d, want %d\n%s", args, code, exitUsage, stderr.String())
		}
	}
}

// TestProductionRangeIsBadUsage: analyze production with its end before
// its start is a usage error (exit 2), like a malformed --from (issue 33
// low: it exited 1).
func TestProductionRangeIsBadUsage(t *testing.T) {
	var stdout, stderr bytes.Buffer
	args := []string{"analyze", "production", "--prometheus.url", "http://127.0.0.1:1", "--from", "now-1h", "--to", "now-2h"}
	if code := run(t.Context(), args, &stdout, &stderr); code != exitUsage || !strings.Contains(stderr.String(), "the end must be after the start") {
		t.Errorf("exit %d, want %d\n%s", code, exitUsage, stderr.String())
	}
}
