// Command nodecheck is deploy/gpu-node-check.sh's helper: the facts of a
// GPU node, raw polling of NVML's power fields and energy counter with
// NVML's own timestamps, the latency of every NVML call the exporter makes,
// GPU process visibility, a stand-in engine that loads the GPU, and the
// check's JSON and markdown summary. Every subcommand writes JSON to stdout.
//
//	nodecheck facts  [--gpu nvml|sim] [--procfs DIR]
//	nodecheck poll   [--gpu nvml|sim] [--duration 5s] [--poll 2ms]
//	nodecheck procs  [--gpu nvml|sim]
//	nodecheck counter [--gpu nvml|sim]
//	nodecheck load   [--gpu nvml|sim] [--busy 30s] [--hold 4s] [--mem-gib 8]
//	nodecheck report --dir WORK --out OUT
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: nodecheck facts|poll|procs|load|report [flags]")
		os.Exit(2)
	}
	fs := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	gpuKind := fs.String("gpu", "nvml", "nvml or sim")
	procfs := fs.String("procfs", "/proc", "the host's procfs as mounted here")
	dur := fs.Duration("duration", 5*time.Second, "poll: how long")
	poll := fs.Duration("poll", 2*time.Millisecond, "poll: pause between reads")
	busy := fs.Duration("busy", 30*time.Second, "load: how long the SMs are kept busy")
	hold := fs.Duration("hold", 4*time.Second, "load: how long the context is held after")
	memGiB := fs.Float64("mem-gib", 8, "load: GPU memory allocated")
	dir := fs.String("dir", "", "report: the work directory")
	out := fs.String("out", "", "report: where node-check.json and node-check.md go")
	_ = fs.Parse(os.Args[2:])
	sim := *gpuKind == "sim"
	var v any
	var err error
	switch os.Args[1] {
	case "facts":
		v, err = facts(sim, *procfs)
	case "poll":
		v, err = pollFields(sim, *dur, *poll)
	case "procs":
		v, err = procs(sim)
	case "counter":
		v, err = counters(sim)
	case "load":
		v, err = load(sim, *busy, *hold, *memGiB)
	case "report":
		err = report(*dir, *out)
		if err == nil {
			return
		}
	default:
		err = fmt.Errorf("unknown subcommand %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "nodecheck:", err)
		os.Exit(1)
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		fmt.Fprintln(os.Stderr, "nodecheck:", err)
		os.Exit(1)
	}
}
