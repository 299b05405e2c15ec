package main

import (
	"log/slog"
	"runtime/debug"
	"testing"
)

func TestMemoryLimitFlag(t *testing.T) {
	t.Setenv("GOMEMLIMIT", "") // present: auto leaves the runtime's limit
	prev := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(prev) })
	log := slog.New(slog.DiscardHandler)
	for _, c := range []struct {
		flag string
		want int64
	}{
		{"300MiB", 300 << 20},
		{"off", 300 << 20}, // unchanged
		{"auto", 300 << 20},
		{"2GiB", 2 << 30},
	} {
		if err := (memoryLimitFlag{c.flag}).apply(log); err != nil {
			t.Fatalf("--memory-limit %s: %v", c.flag, err)
		}
		if got := debug.SetMemoryLimit(-1); got != c.want {
			t.Errorf("--memory-limit %s: limit %d, want %d", c.flag, got, c.want)
		}
	}
	for _, bad := range []string{"", "lots", "-1MiB", "0"} {
		err := (memoryLimitFlag{bad}).apply(log)
		if code := exitCode(err); err == nil || code != exitUsage {
			t.Errorf("--memory-limit %q: error %v (exit %d), want a usage error", bad, err, code)
		}
	}
	if got := debug.SetMemoryLimit(-1); got != 2<<30 {
		t.Errorf("a bad value changed the limit to %d", got)
	}
}
