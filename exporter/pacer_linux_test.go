//go:build linux

package exporter

import (
	"bufio"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/joulemark/joulemark/internal/gpu"
)

// TestSamplerSleepsOncePerTick: between ticks the sampling loop leaves the
// runtime nothing to wake for, so the process's threads go to sleep
// (voluntary context switches) about once per tick. With a Go ticker and
// a watchdog timer re-armed per tick it was three to four: the poller
// waking early on its millisecond timeout, then again; sysmon sleeping no
// longer than the next timer. A count, not a time: the ticks are counted
// as the GPUs' reads, however late they come.
func TestSamplerSleepsOncePerTick(t *testing.T) {
	prev := runtime.GOMAXPROCS(1) // as --runtime.gomaxprocs' default
	defer runtime.GOMAXPROCS(prev)
	sim, err := gpu.NewSim(gpu.SimConfig{GPUs: 8})
	if err != nil {
		t.Fatal(err)
	}
	e, err := newExp(Config{Backend: sim, Interval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	e.Start(t.Context())
	defer func() {
		if err := e.Close(); err != nil {
			t.Error(err)
		}
	}()
	if _, ok := e.smp.p.(*fdPacer); !ok {
		t.Fatalf("pacer %T, want the timerfd pacer on Linux", e.smp.p)
	}
	reads := func() int {
		e.mu.RLock()
		defer e.mu.RUnlock()
		return e.gpus[0].attempts
	}
	waitFor(t, "the first ticks", func() bool { return reads() > 5 })
	runtime.GC()
	sw0, r0 := sleeps(t), reads()
	for reads() < r0+200 {
		time.Sleep(200 * time.Millisecond)
	}
	sw, r := sleeps(t)-sw0, reads()-r0
	if perTick := float64(sw) / float64(r); perTick > 2 || testing.Verbose() { // the figure, with -v
		msg := t.Logf
		if perTick > 2 {
			msg = t.Errorf
		}
		msg("%d voluntary context switches in %d ticks: %.2f a tick, want about 1, at most 2", sw, r, perTick)
	}
}

// sleeps is the voluntary context switches of this process's threads.
func sleeps(t *testing.T) uint64 {
	t.Helper()
	tasks, err := filepath.Glob("/proc/self/task/*/status")
	if err != nil || len(tasks) == 0 {
		t.Fatalf("no /proc/self/task on Linux: %v", err)
	}
	var n uint64
	for _, p := range tasks {
		f, err := os.Open(p)
		if err != nil {
			continue // the thread exited
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "voluntary_ctxt_switches:"); ok {
				k, _ := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
				n += k
			}
		}
		f.Close()
	}
	return n
}
