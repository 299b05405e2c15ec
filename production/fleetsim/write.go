package fleetsim

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb"

	"github.com/joulemark/joulemark/internal/contract"
)

// Window is the span of each block written (Prometheus' head block span).
const Window = 2 * time.Hour

// Stats count what Write wrote.
type Stats struct {
	Series  int   // distinct series
	Samples int64 // samples
	Blocks  int
	// HeadHeapBytes is the most Go heap (in use, after a GC) one block's
	// TSDB head held before its flush: what a Prometheus ingesting the
	// fleet holds per 2 h of head.
	HeadHeapBytes uint64
}

// Write writes the fleet into dir as TSDB blocks of Window each (dir is
// created; it must hold no blocks overlapping the range). A Prometheus, or
// promserver, opened on dir serves it.
func (f *Fleet) Write(ctx context.Context, dir string, log *slog.Logger) (Stats, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var st Stats
	// An empty WAL: what a read-only open (promserver) needs to find.
	if err := os.MkdirAll(filepath.Join(dir, "wal"), 0o755); err != nil {
		return st, fmt.Errorf("fleet: %w", err)
	}
	w := &writer{f: f, seen: map[string]bool{},
		gpuEnergy: make([]float64, f.GPUs()), unalloc: make([]float64, f.GPUs())}
	from, to := f.cfg.From.UnixMilli(), f.cfg.To.UnixMilli()
	for w0 := from; w0 <= to; w0 += Window.Milliseconds() {
		w1 := min(w0+Window.Milliseconds(), to+1) // [w0, w1)
		base := heapInUse()
		// The head refuses samples older than half its span behind the
		// newest: twice the window lets each series be written whole.
		bw, err := tsdb.NewBlockWriter(log, dir, 2*Window.Milliseconds())
		if err != nil {
			return st, fmt.Errorf("fleet: block writer: %w", err)
		}
		w.bw, w.ctx, w.n = bw, ctx, 0
		w.app = bw.Appender(ctx)
		err = w.window(ctx, w0, w1)
		if err == nil {
			err = w.app.Commit()
		}
		if err == nil {
			if h := heapInUse(); h > base {
				st.HeadHeapBytes = max(st.HeadHeapBytes, h-base)
			}
			_, err = bw.Flush(ctx)
		}
		if cerr := bw.Close(); err == nil && cerr != nil {
			err = cerr
		}
		if err != nil {
			return st, fmt.Errorf("fleet: block at %s: %w", time.UnixMilli(w0).UTC().Format(time.RFC3339), err)
		}
		st.Blocks++
	}
	st.Series, st.Samples = len(w.seen), w.samples
	return st, nil
}

// heapInUse is the Go heap in use after a GC.
func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

// writer appends one window at a time; gpuEnergy and unalloc carry each
// GPU's counters from one window to the next.
type writer struct {
	f                  *Fleet
	bw                 *tsdb.BlockWriter
	ctx                context.Context
	app                storage.Appender
	n                  int // samples since the last commit
	samples            int64
	seen               map[string]bool
	gpuEnergy, unalloc []float64
}

// commitEvery bounds a transaction.
const commitEvery = 200_000

// series is one series being appended in the window.
type series struct {
	ls  labels.Labels
	ref storage.SeriesRef
}

func (w *writer) newSeries(ls labels.Labels) *series {
	w.seen[ls.String()] = true
	return &series{ls: ls}
}

func (w *writer) add(s *series, tms int64, v float64) error {
	ref, err := w.app.Append(s.ref, s.ls, tms, v)
	if err != nil {
		return fmt.Errorf("%s at %d: %w", s.ls, tms, err)
	}
	s.ref = ref
	w.samples++
	if w.n++; w.n >= commitEvery {
		if err := w.app.Commit(); err != nil {
			return err
		}
		w.app, w.n = w.bw.Appender(w.ctx), 0
	}
	return nil
}

// window writes [w0, w1) ms of every series.
func (w *writer) window(ctx context.Context, w0, w1 int64) error {
	for _, s := range w.f.slots {
		if err := ctx.Err(); err != nil {
			return err
		}
		pods := w.f.pods(s, float64(w0)/1000, float64(w1)/1000)
		if err := w.gpus(s, pods, w0, w1); err != nil {
			return err
		}
		for _, p := range pods {
			if err := w.pod(p, w0, w1); err != nil {
				return err
			}
		}
	}
	return w.recorded(w0, w1)
}

// grid is the sample times of a step in [w0, w1) ms.
func grid(w0, w1 int64, step time.Duration) (first, stepMs int64) {
	stepMs = step.Milliseconds()
	return (w0 + stepMs - 1) / stepMs * stepMs, stepMs
}

// exporterLabels are a node's exporter scrape labels (deploy/prometheus:
// job, instance, node).
func exporterLabels(node int, kv ...string) labels.Labels {
	return labels.FromStrings(append([]string{"job", "joulemark-exporter",
		"instance", nodeName(node) + ":9402", "node", nodeName(node)}, kv...)...)
}

// gpus writes the per-GPU exporter series of a slot's GPUs: their gauges,
// energy and unallocated counters, and the allocation info of each pod.
func (w *writer) gpus(s slot, pods []pod, w0, w1 int64) error {
	t0, step := grid(w0, w1, w.f.cfg.ExporterInterval)
	dt := w.f.cfg.ExporterInterval.Seconds()
	for g := s.first; g < s.first+s.gpus; g++ {
		gpu, uuid := strconv.Itoa(g), fmt.Sprintf("GPU-%04d-%d", s.node, g)
		id := s.node*w.f.cfg.GPUsPerNode + g
		mk := func(name string, kv ...string) *series {
			return w.newSeries(exporterLabels(s.node, append([]string{"__name__", name, contract.LabelGPU, gpu, contract.LabelUUID, uuid}, kv...)...))
		}
		info := mk(contract.GPUInfo, "energy_scope", "gpu", "name", "NVIDIA H100 80GB HBM3")
		power, energy, unalloc := mk(contract.GPUPower), mk(contract.GPUEnergy), mk(contract.UnallocatedEnergy)
		util, mem, temp := mk(contract.GPUUtilization), mk(contract.GPUMemoryUsed), mk(contract.GPUTemperature)
		limit, clock := mk(contract.GPUPowerLimit), mk(contract.GPUSMClock)
		alloc := make([]*series, len(pods))
		for i, p := range pods {
			alloc[i] = mk(contract.GPUAllocationInfo, "namespace", namespace(s.model, w.f.cfg.Namespaces),
				"pod", p.name(), "container", "engine", "resource", "nvidia.com/gpu", "shared", "false")
		}
		for tms := t0; tms < w1; tms += step {
			t := float64(tms) / 1000
			watts, l, held := idleWatts, 0.0, -1
			for i, p := range pods {
				if t >= p.start && t < p.end {
					held, l = i, load(s.model, t)
					watts = gpuWatts(s.model, t)
				}
			}
			w.gpuEnergy[id] += watts * dt
			if held < 0 {
				w.unalloc[id] += watts * dt
			}
			for _, x := range []struct {
				s *series
				v float64
			}{{info, 1}, {power, watts}, {energy, w.gpuEnergy[id]}, {unalloc, w.unalloc[id]},
				{util, l}, {mem, math.Round(l * 7e10)}, {temp, math.Round(35 + 45*l)},
				{limit, 700}, {clock, math.Round(1.98e9 * (0.6 + 0.4*l))}} {
				if err := w.add(x.s, tms, x.v); err != nil {
					return err
				}
			}
			if held >= 0 {
				if err := w.add(alloc[held], tms, 1); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// pod writes a pod's exporter energy counter and its engine's series.
func (w *writer) pod(p pod, w0, w1 int64) error {
	ns, name := namespace(p.s.model, w.f.cfg.Namespaces), p.name()
	energy := w.newSeries(exporterLabels(p.s.node, "__name__", contract.PodEnergy, "namespace", ns, "pod", name, "container", "engine"))
	step := w.f.cfg.ExporterInterval.Seconds()
	if first, last, ok := w.f.sampled(p, step); ok {
		if err := w.counter(energy, p, first, last, step, w0, w1, podEnergy); err != nil {
			return err
		}
	}
	estep := w.f.cfg.EngineInterval.Seconds()
	first, last, ok := w.f.sampled(p, estep)
	if !ok {
		return nil
	}
	eng := func(metric string) *series {
		return w.newSeries(labels.FromStrings("__name__", metric, "job", "inference-engine",
			"instance", fmt.Sprintf("10.%d.%d.%d:8000", p.s.node/256, p.s.node%256, p.s.first), "node", nodeName(p.s.node),
			"namespace", ns, "pod", name, "model_name", modelName(p.s.model), "engine", "0"))
	}
	if err := w.counter(eng(mTokens), p, first, last, estep, w0, w1, podTokens); err != nil {
		return err
	}
	prompt, running, kv := eng(mPrompt), eng(mRunning), eng(mKV)
	lo, hi := max(int64(math.Round(first*1000)), w0), min(int64(math.Round(last*1000)), w1-1)
	t0, stepMs := grid(lo, hi+1, w.f.cfg.EngineInterval)
	for tms := t0; tms <= hi; tms += stepMs {
		t := float64(tms) / 1000
		l := load(p.s.model, t)
		for _, x := range []struct {
			s *series
			v float64
		}{{prompt, 3 * podTokens(p, first, t)}, {running, math.Round(64 * l * float64(p.s.gpus))}, {kv, l}} {
			if err := w.add(x.s, tms, x.v); err != nil {
				return err
			}
		}
	}
	return nil
}

// counter appends c's samples from first to last (seconds, on a grid of
// step) that fall in [w0, w1) ms.
func (w *writer) counter(s *series, p pod, first, last, step float64, w0, w1 int64, c func(pod, float64, float64) float64) error {
	lo, hi := max(int64(math.Round(first*1000)), w0), min(int64(math.Round(last*1000)), w1-1)
	t0, stepMs := grid(lo, hi+1, time.Duration(step*float64(time.Second)))
	for tms := t0; tms <= hi; tms += stepMs {
		if err := w.add(s, tms, c(p, first, float64(tms)/1000)); err != nil {
			return err
		}
	}
	return nil
}
