package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/joulemark/joulemark/internal/gpu"
)

// DoctorCmd checks a GPU node before the exporter is deployed on it.
type DoctorCmd struct {
	GPU      string        `name:"gpu" default:"nvml" enum:"nvml,sim" help:"GPU backend: nvml (NVIDIA driver) or sim (simulated GPUs)."`
	GPUs     int           `name:"gpus" default:"0" help:"GPUs to check: the first N with nvml (0: all); the number of simulated GPUs with sim (0: 1)."`
	Duration time.Duration `name:"duration" default:"2s" help:"How long each GPU's energy counter is polled to measure its update period."`
	Poll     time.Duration `name:"poll" default:"2ms" help:"Pause between reads while polling."`
	Interval time.Duration `name:"sample.interval" default:"100ms" help:"The exporter's sampling interval the read latency is judged against."`
	Format   string        `name:"format" default:"text" enum:"text,json" help:"Output format (${enum})."`
	ProcFS   string        `name:"path.procfs" default:"/proc" help:"The host's procfs as mounted here (e.g. /host/proc in a container), to tell whether this process shares the host's PID namespace."`

	SimEnergyCounter bool          `name:"sim.energy-counter" default:"true" negatable:"" help:"Simulated GPUs report an energy counter."`
	SimCounterPeriod time.Duration `name:"sim.counter-period" default:"100ms" help:"How often the simulated energy counter updates."`
	SimCounterJitter time.Duration `name:"sim.counter-jitter" default:"0s" help:"Seeded jitter of each simulated counter update."`
	SimSeed          uint64        `name:"sim.seed" default:"1" help:"Seed of the simulation."`

	out io.Writer
}

// Run diagnoses the GPUs and prints the report; it fails when a check
// failed.
func (c *DoctorCmd) Run(g *Globals) error {
	var b gpu.Backend
	switch c.GPU {
	case "sim":
		sim, err := gpu.NewSim(gpu.SimConfig{GPUs: max(c.GPUs, 1), EnergyCounter: c.SimEnergyCounter, CounterPeriod: c.SimCounterPeriod,
			CounterJitter: c.SimCounterJitter, Seed: c.SimSeed})
		if err != nil {
			return err
		}
		b = sim
	case "nvml":
		nv, err := gpu.OpenNVML(gpu.NVMLOptions{MaxGPUs: c.GPUs, Logger: g.Logger()})
		if err != nil {
			return err
		}
		b = nv
	}
	defer b.Close()
	opts := gpu.DoctorOptions{Duration: c.Duration, Poll: c.Poll, Interval: c.Interval}
	if c.GPU == "nvml" {
		ns, err := gpu.DetectPIDNamespace(c.ProcFS)
		if err != nil {
			return err
		}
		opts.PIDNamespace = &ns
	}
	r := gpu.Doctor(b, opts)
	out := c.out
	if out == nil {
		out = os.Stdout
	}
	if c.Format == "json" {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(r); err != nil {
			return fmt.Errorf("writing the report: %w", err)
		}
	} else if err := r.WriteText(out); err != nil {
		return fmt.Errorf("writing the report: %w", err)
	}
	if r.Verdict == gpu.VerdictFail {
		return fmt.Errorf("a check failed (see the report)")
	}
	return nil
}
