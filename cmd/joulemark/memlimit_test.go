package main

import (
	"log/slog"
	"runtime/debug"
	"testing"

	"github.com/alecthomas/units"

	"github.com/joulemark/joulemark/analyze"
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

// TestGCPercentFlag: --gc-percent sets the collector's target, its default
// is analyze.GCPercent, GOGC in the environment wins, and a target below
// -1 is a usage error.
func TestGCPercentFlag(t *testing.T) {
	t.Cleanup(func() { debug.SetGCPercent(100) })
	t.Setenv("GOGC", "")
	cli, p := testParser(t)
	if _, err := p.Parse([]string{"analyze", "run", "--run-id", "r1"}); err != nil {
		t.Fatal(err)
	}
	if got := cli.Analyze.Run.GCPercent; got != analyze.GCPercent {
		t.Fatalf("--gc-percent default %d, want analyze.GCPercent %d", got, analyze.GCPercent)
	}
	for _, c := range []struct {
		env       string
		flag, was int
		want      int
	}{
		{"", 30, 100, 30},
		{"", -1, 100, -1},
		{"150", 30, 150, 150}, // GOGC wins
	} {
		t.Setenv("GOGC", c.env)
		debug.SetGCPercent(c.was)
		if err := (gcPercentFlag{c.flag}).apply(); err != nil {
			t.Fatalf("--gc-percent %d: %v", c.flag, err)
		}
		if got := debug.SetGCPercent(c.was); got != c.want {
			t.Errorf("GOGC=%q --gc-percent %d: target %d, want %d", c.env, c.flag, got, c.want)
		}
	}
	err := (gcPercentFlag{-2}).apply()
	if code := exitCode(err); err == nil || code != exitUsage {
		t.Errorf("--gc-percent -2: error %v (exit %d), want a usage error", err, code)
	}
}

// TestHugePagesFlag: --huge-pages defaults to analyze.HugePageHeap, takes
// a size or 0, and anything else is a usage error.
func TestHugePagesFlag(t *testing.T) {
	cli, p := testParser(t)
	if _, err := p.Parse([]string{"analyze", "run", "--run-id", "r1"}); err != nil {
		t.Fatal(err)
	}
	if got, err := units.ParseBase2Bytes(cli.Analyze.Run.HugePages); err != nil || got != analyze.HugePageHeap {
		t.Fatalf("--huge-pages default %q, want analyze.HugePageHeap (%d bytes)", cli.Analyze.Run.HugePages, analyze.HugePageHeap)
	}
	log := slog.New(slog.DiscardHandler)
	for _, ok := range []string{"0", "16MiB"} {
		if err := (hugePagesFlag{ok}).apply(log); err != nil {
			t.Errorf("--huge-pages %s: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "lots", "-1MiB", "1.5"} {
		err := (hugePagesFlag{bad}).apply(log)
		if code := exitCode(err); err == nil || code != exitUsage {
			t.Errorf("--huge-pages %q: error %v (exit %d), want a usage error", bad, err, code)
		}
	}
}
