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
