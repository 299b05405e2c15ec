package analyze

import (
	"fmt"
	"strings"

	"github.com/joulemark/joulemark/internal/contract"
	"github.com/joulemark/joulemark/report"
)

// gpuMemory fills the gpu_memory section over the formal phase.
func (c *computation) gpuMemory() {
	gm := &report.GPUMemory{GPUs: []report.GPUMemoryOf{}}
	c.r.GPUMemory = gm
	fb, ok := c.complete("formal")
	if !ok {
		return
	}
	var peak, mean, maxPeak float64
	all := true
	for _, g := range c.d.GPUs {
		of := report.GPUMemoryOf{GPU: g.GPU, UUID: g.UUID, Instance: g.Instance}
		n, sum, hi := 0, 0.0, 0.0
		for _, s := range g.Memory {
			if s.T < fb.Start || s.T > fb.End {
				continue
			}
			n++
			sum += s.V
			hi = max(hi, s.V)
		}
		if n > 0 {
			of.PeakBytes, of.MeanBytes = new(hi), new(sum/float64(n))
			peak += hi
			mean += sum / float64(n)
			maxPeak = max(maxPeak, hi)
		} else {
			all = false
		}
		gm.GPUs = append(gm.GPUs, of)
	}
	if all && len(c.d.GPUs) > 0 {
		gm.PeakBytes, gm.MeanBytes, gm.MaxGPUPeakBytes = new(peak), new(mean), new(maxPeak)
	}
}

// gib formats bytes in GiB.
func gib(p *float64) string {
	if p == nil {
		return "—"
	}
	return fmt.Sprintf("%.2f GiB", *p/(1<<30))
}

// gpuMemoryMarkdown is report.md's GPU memory section.
func gpuMemoryMarkdown(p func(string, ...any), r *report.Report) {
	gm := r.GPUMemory
	if gm == nil {
		return
	}
	p("## GPU memory (formal phase)\n\n")
	if gm.PeakBytes == nil {
		var missing []string
		for _, g := range gm.GPUs {
			if g.PeakBytes == nil {
				missing = append(missing, "gpu "+g.GPU+" ("+g.UUID+")")
			}
		}
		p("No memory samples in the formal phase (%s).\n\n", orDash(strings.Join(missing, ", ")))
		return
	}
	p("| GPU | peak | mean |\n|---|---:|---:|\n")
	for _, g := range gm.GPUs {
		p("| %s | %s | %s |\n", "gpu "+g.GPU+" ("+g.UUID+")", gib(g.PeakBytes), gib(g.MeanBytes))
	}
	p("| all (sum) | %s | %s |\n\nLargest single-GPU peak: %s.\n\n", gib(gm.PeakBytes), gib(gm.MeanBytes), gib(gm.MaxGPUPeakBytes))
}

// gpuEnergy fills energy_per_gpu.
func (c *computation) gpuEnergy() {
	out := []report.GPUEnergy{}
	total := 0.0
	for i, g := range c.d.GPUs {
		ge := report.GPUEnergy{GPU: g.GPU, UUID: g.UUID, Stages: map[string]*float64{}}
		for _, ph := range contract.Phases {
			name := string(ph)
			b, ok := c.complete(name)
			if !ok {
				ge.Stages[name] = nil
				continue
			}
			if e, ok := c.curves[i].between(b.Start, b.End); ok {
				ge.Stages[name] = new(e)
			} else {
				ge.Stages[name] = nil
			}
		}
		ge.FormalJoules = ge.Stages["formal"]
		ge.LifecycleJoules = sumPtr(ge.Stages["startup"], ge.Stages["warmup"], ge.Stages["formal"], ge.Stages["release"])
		if ge.FormalJoules != nil {
			total += *ge.FormalJoules
		}
		out = append(out, ge)
	}
	for i := range out {
		if out[i].FormalJoules != nil && total > 0 {
			out[i].ShareOfFormal = new(*out[i].FormalJoules / total)
		}
	}
	c.r.EnergyPerGPU = out
}

// gpuEnergyMarkdown is report.md's per-GPU energy table.
func gpuEnergyMarkdown(p func(string, ...any), r *report.Report) {
	if len(r.EnergyPerGPU) == 0 {
		return
	}
	p("Per GPU (energy counter at the stage boundaries):\n\n| GPU | idle | startup | warm-up | formal | release | lifecycle | share of formal |\n|---|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, g := range r.EnergyPerGPU {
		p("| gpu %s (%s) | %s | %s | %s | %s | %s | %s | %s |\n", g.GPU, g.UUID,
			num(g.Stages["idle"], "%.1f J"), num(g.Stages["startup"], "%.1f J"), num(g.Stages["warmup"], "%.1f J"),
			num(g.FormalJoules, "%.1f J"), num(g.Stages["release"], "%.1f J"), num(g.LifecycleJoules, "%.1f J"), scaled(g.ShareOfFormal, 100, "%.1f%%"))
	}
	p("\n")
}

// whPer1k converts J/token to Wh per 1000 tokens.
func whPer1k(jpt *float64) *float64 {
	if jpt == nil {
		return nil
	}
	return new(*jpt * 1000 / 3600)
}
