package analyze

import (
	"context"
	"fmt"
	"strings"

	"github.com/joulemark/joulemark/internal/contract"
)

// GPUMemory is report.json "gpu_memory": GPU memory in use over the formal
// phase, from the exporter's 1 Hz joulemark_gpu_memory_used_bytes. Totals
// sum the GPUs (peak_bytes sums each GPU's own peak, an upper bound of the
// simultaneous peak). Null when no sample lies in the formal phase.
type GPUMemory struct {
	PeakBytes *float64 `json:"peak_bytes"`
	MeanBytes *float64 `json:"mean_bytes"`
	// MaxGPUPeakBytes is the largest single-GPU peak: what has to fit in
	// one GPU's memory (recommend --max-gpu-memory).
	MaxGPUPeakBytes *float64      `json:"max_gpu_peak_bytes"`
	GPUs            []GPUMemoryOf `json:"gpus"`
}

// GPUMemoryOf is one GPU's memory over the formal phase.
type GPUMemoryOf struct {
	GPU       string   `json:"gpu"`
	UUID      string   `json:"uuid"`
	Instance  string   `json:"-"` // for labels; a GPU is its instance and UUID
	PeakBytes *float64 `json:"peak_bytes"`
	MeanBytes *float64 `json:"mean_bytes"`
}

// loadGPUMemory reads each run GPU's memory series into d.GPUs.
func (l *loader) loadGPUMemory(ctx context.Context, d *RunData, gpuSel gpuSet, sp rawSpan) error {
	m, err := l.readSeries(ctx, fmt.Sprintf("%s{%s}", contract.GPUMemoryUsed, gpuSel.sel), sp.windows)
	if err != nil {
		return err
	}
	for _, ss := range m {
		k := keyOf(ss.metric)
		for i := range d.GPUs {
			if d.GPUs[i].UUID == k.uuid && d.GPUs[i].Instance == k.instance && len(ss.samples) > len(d.GPUs[i].Memory) {
				d.GPUs[i].Memory = ss.samples
			}
		}
	}
	return nil
}

// gpuMemory fills the gpu_memory section over the formal phase.
func (c *computation) gpuMemory() {
	gm := &GPUMemory{GPUs: []GPUMemoryOf{}}
	c.r.GPUMemory = gm
	fb, ok := c.complete("formal")
	if !ok {
		return
	}
	var peak, mean, maxPeak float64
	all := true
	for _, g := range c.d.GPUs {
		of := GPUMemoryOf{GPU: g.GPU, UUID: g.UUID, Instance: g.Instance}
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
func gpuMemoryMarkdown(p func(string, ...any), r *Report) {
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

// GPUEnergy is one GPU's energy per stage, from its energy counter
// interpolated at the stage boundaries (report.json "energy_per_gpu").
type GPUEnergy struct {
	GPU             string              `json:"gpu"`
	UUID            string              `json:"uuid"`
	Stages          map[string]*float64 `json:"stages"`
	FormalJoules    *float64            `json:"formal_joules"`
	LifecycleJoules *float64            `json:"lifecycle_joules"` // startup + warm-up + formal + release
	// ShareOfFormal is the GPU's share of the formal energy of all GPUs.
	ShareOfFormal *float64 `json:"share_of_formal"`
}

// gpuEnergy fills energy_per_gpu.
func (c *computation) gpuEnergy() {
	out := []GPUEnergy{}
	total := 0.0
	for i, g := range c.d.GPUs {
		ge := GPUEnergy{GPU: g.GPU, UUID: g.UUID, Stages: map[string]*float64{}}
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
func gpuEnergyMarkdown(p func(string, ...any), r *Report) {
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
