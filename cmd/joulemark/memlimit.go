package main

import (
	"log/slog"
	"os"
	"runtime/debug"
	"strconv"

	"github.com/KimMachineGun/automemlimit/memlimit"
	"github.com/alecthomas/kong"
	"github.com/alecthomas/units"
	"github.com/joulemark/joulemark/analyze"
	"github.com/joulemark/joulemark/internal/hugeheap"
)

// memoryLimitFlag is the --memory-limit flag of the analyses: the Go
// runtime's soft memory limit (GOMEMLIMIT), as Prometheus'
// --auto-gomemlimit sets it.
type memoryLimitFlag struct {
	MemoryLimit string `name:"memory-limit" default:"auto" placeholder:"SIZE" help:"Soft limit of this process' Go memory (debug.SetMemoryLimit, as GOMEMLIMIT): the garbage collector runs more often as the heap nears it, so the peak memory stays near it at some CPU cost. auto: 90% of the cgroup's memory limit where one is set (as Prometheus sets its own; GOMEMLIMIT in the environment wins), else none; off: none but GOMEMLIMIT's; or a size such as 300MiB."`
}

// gcPercentFlag is analyze run's --gc-percent: the garbage collector's
// target (GOGC). analyze production keeps Go's: its maps cost a
// collection more (docs/analyze.md, "Scale (measured)").
type gcPercentFlag struct {
	GCPercent int `name:"gc-percent" default:"${gc_percent}" placeholder:"PERCENT" help:"The garbage collector's target (debug.SetGCPercent, as GOGC): a collection when the heap has grown by this percentage since the last. The analysis holds large pointer-free arrays that a collection marks quickly, so a target below Go's 100 keeps the peak memory down for little CPU. GOGC in the environment wins; -1: no collections but the memory limit's."`
}

// hugePagesFlag is analyze run's --huge-pages: the part of the heap the
// kernel is asked to back with transparent huge pages.
type hugePagesFlag struct {
	HugePages string `name:"huge-pages" default:"${huge_pages}" placeholder:"SIZE" help:"Address range of this process' heap the kernel is asked to back with transparent huge pages (Linux, madvise MADV_HUGEPAGE; at most the memory limit): a first write there maps 2 MiB at once instead of 4 KiB, which saves the analysis about a quarter of its CPU on a virtual machine. Costs no memory until used. 0: none."`
}

// memoryVars is the memory flags' defaults.
func memoryVars() kong.Vars {
	return kong.Vars{"gc_percent": strconv.Itoa(analyze.GCPercent), "huge_pages": units.Base2Bytes(analyze.HugePageHeap).String()}
}

// apply advises the range the flag names; where the kernel cannot, it
// logs why and the analysis runs on small pages.
func (f hugePagesFlag) apply(log *slog.Logger) error {
	b, err := units.ParseBase2Bytes(f.HugePages)
	if err != nil || b < 0 {
		return usageErrorf("--huge-pages %q: want a size such as 512MiB, or 0", f.HugePages)
	}
	if err := hugeheap.Advise(int64(b)); err != nil {
		log.Debug("no huge pages for the heap", "err", err)
	}
	return nil
}

// apply sets the collector's target unless GOGC is set.
func (f gcPercentFlag) apply() error {
	if f.GCPercent < -1 {
		return usageErrorf("--gc-percent %d: want -1 (off) or more", f.GCPercent)
	}
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(f.GCPercent)
	}
	return nil
}

// apply sets the limit the flag names and logs it.
func (f memoryLimitFlag) apply(log *slog.Logger) error {
	switch f.MemoryLimit {
	case "off":
		return nil
	case "auto":
		// No cgroup limit (or none readable) leaves the runtime's.
		limit, err := memlimit.Set(memlimit.WithRatio(0.9), memlimit.WithProvider(memlimit.FromCgroup))
		if err != nil {
			log.Debug("no memory limit from the cgroup", "err", err)
		}
		if limit > 0 && limit < 1<<62 {
			log.Debug("memory limit", "bytes", limit)
		}
		return nil
	}
	b, err := units.ParseBase2Bytes(f.MemoryLimit)
	if err != nil || b <= 0 {
		return usageErrorf("--memory-limit %q: want auto, off or a size such as 300MiB", f.MemoryLimit)
	}
	debug.SetMemoryLimit(int64(b))
	log.Debug("memory limit", "bytes", int64(b))
	return nil
}
