package main

import (
	"log/slog"
	"runtime/debug"

	"github.com/KimMachineGun/automemlimit/memlimit"
	"github.com/alecthomas/units"
)

// memoryLimitFlag is the --memory-limit flag of the analyses: the Go
// runtime's soft memory limit (GOMEMLIMIT), as Prometheus'
// --auto-gomemlimit sets it.
type memoryLimitFlag struct {
	MemoryLimit string `name:"memory-limit" default:"auto" placeholder:"SIZE" help:"Soft limit of this process' Go memory (debug.SetMemoryLimit, as GOMEMLIMIT): the garbage collector runs more often as the heap nears it, so the peak memory stays near it at some CPU cost. auto: 90% of the cgroup's memory limit where one is set (as Prometheus sets its own; GOMEMLIMIT in the environment wins), else none; off: none but GOMEMLIMIT's; or a size such as 300MiB."`
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
