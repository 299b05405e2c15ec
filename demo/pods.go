package demo

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/common/config"

	"github.com/joulemark/joulemark/exporter"
	"github.com/joulemark/joulemark/internal/ctxtime"
	"github.com/joulemark/joulemark/internal/gpu"
	"github.com/joulemark/joulemark/internal/podresources"
	"github.com/joulemark/joulemark/internal/simengine"
	"github.com/joulemark/joulemark/production"
)

// The demo's simulated cluster, as the fake kubelet tells the exporter: the
// benchmarked engine runs as pod EnginePod on the first GPUs; with 5 GPUs
// or more a second engine (ServingPod, model ServingModel) serves steady
// traffic of its own on the third-to-last GPU; a second replica of the
// benchmarked model (IdlePod) holds the next-to-last GPU and serves
// nothing; the last GPU is unallocated. With fewer than 3 GPUs the engine
// holds them all. The engines' tokens join the exporter's per-pod
// energy on namespace and pod in the recording rules and in the
// production report.
const (
	PodNamespace  = "joulemark-demo"
	EnginePod     = "sim-engine-0"
	IdlePod       = "sim-engine-1"
	ServingPod    = "sim-small-0"
	ServingModel  = "joulemark/sim-llm-small"
	gpuResource   = "nvidia.com/gpu"
	productionDir = "production"
)

// layout is which simulated GPU indexes each pod holds.
type layout struct {
	engine, serving, idle []int
}

func newLayout(gpus int) layout {
	var l layout
	n := gpus
	if gpus >= 3 {
		n = gpus - 2
		l.idle = []int{gpus - 2}
	}
	if gpus >= 5 {
		n = gpus - 3
		l.serving = []int{gpus - 3}
	}
	for i := range n {
		l.engine = append(l.engine, i)
	}
	return l
}

// engineLabels are the target labels a Kubernetes scrape of a pod adds.
func engineLabels(pod string) map[string]string {
	return map[string]string{"node": NodeLabel, "namespace": PodNamespace, "pod": pod}
}

// detachOthers keeps the GPUs no engine holds (the idle replica's, the
// unallocated one) at idle, whatever the engines do.
func (d *demo) detachOthers() error {
	driven := map[int]bool{}
	for _, i := range append(append([]int{}, d.layout.engine...), d.layout.serving...) {
		driven[i] = true
	}
	for i := range d.cfg.GPUs {
		if !driven[i] {
			if err := d.sim.SetGPUAttached(i, false); err != nil {
				return err
			}
		}
	}
	return nil
}

// startKubelet serves the kubelet's PodResources API in-process (a unix
// socket in a temporary directory) with the demo's layout.
func (d *demo) startKubelet() (*exporter.PodConfig, error) {
	dir, err := os.MkdirTemp("", "jmk-kubelet-")
	if err != nil {
		return nil, fmt.Errorf("fake kubelet: %w", err)
	}
	d.onClose(func() error { return os.RemoveAll(dir) })
	fake, err := podresources.NewFake(filepath.Join(dir, "kubelet.sock"))
	if err != nil {
		return nil, err
	}
	d.onClose(fake.Close)
	var uuids []string
	for _, dev := range d.sim.Devices() {
		uuids = append(uuids, dev.UUID)
	}
	pods := []podresources.SimPod{{Namespace: PodNamespace, Pod: EnginePod, GPUs: d.layout.engine}}
	if len(d.layout.idle) > 0 {
		pods = append(pods, podresources.SimPod{Namespace: PodNamespace, Pod: IdlePod, GPUs: d.layout.idle})
	}
	if len(d.layout.serving) > 0 {
		pods = append(pods, podresources.SimPod{Namespace: PodNamespace, Pod: ServingPod, GPUs: d.layout.serving})
	}
	fake.Set(podresources.SimAllocations(pods, uuids))
	cli, err := podresources.Dial(fake.Socket(), []string{gpuResource}, 5*time.Second)
	if err != nil {
		return nil, err
	}
	d.onClose(cli.Close)
	return &exporter.PodConfig{Lister: cli, Refresh: time.Second}, nil
}

// startIdleReplica serves the metrics of a second engine of the same model
// that receives no request: an allocated, idle replica.
func (d *demo) startIdleReplica() error {
	if d.idleSrv == nil {
		return nil
	}
	eng, err := simengine.New(d.cfg.Engine, nopSink{})
	if err != nil {
		return err
	}
	d.idleEng = eng
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(labelGatherer{eng.Registry(), engineLabels(IdlePod)}, promhttp.HandlerOpts{}))
	d.idleSrv.serve(mux)
	return nil
}

// nopSink drives no GPU.
type nopSink struct{}

func (nopSink) SetLoad(float64)                {}
func (nopSink) SetEngineState(gpu.EngineState) {}

// production writes and prints the production view of the demo's time
// range: energy and J/token per model and per pod, the idle replica, the
// unallocated GPU, the engine's start.
func (d *demo) production(ctx context.Context) error {
	rep := d.res.Report
	idle, okI := rep.Stages["idle"]
	rel, okR := rep.Stages["release"]
	if !okI || !okR {
		return nil
	}
	out := d.run.Path(productionDir)
	pr, err := production.Run(ctx, production.Config{
		PrometheusURL: d.res.PrometheusURL, HTTP: config.DefaultHTTPClientConfig,
		From: exporter.Time(idle.Start), To: exporter.Time(rel.End), OutDir: out, QueryTimeout: time.Minute, Cost: d.cfg.Cost,
		Logger: d.log.With("component", "production"),
	})
	if err != nil {
		return fmt.Errorf("production view: %w", err)
	}
	d.res.Production, d.res.ProductionDir = pr, out
	fmt.Fprintf(d.cfg.Out, "\nProduction view of the same span (joulemark analyze production; %s):\n\n", out)
	return production.WriteMarkdown(d.cfg.Out, pr)
}

// podSink drives only the GPUs a pod holds: its engine's state and load.
type podSink struct {
	sim  *gpu.Sim
	gpus []int
}

func (p podSink) SetLoad(l float64) {
	for _, i := range p.gpus {
		_ = p.sim.SetGPULoad(i, l)
	}
}

// SetMemory gives the pod's GPUs the engine's memory.
func (p podSink) SetMemory(m gpu.SimMemory) {
	for _, i := range p.gpus {
		_ = p.sim.SetGPUMemory(i, m)
	}
}

func (p podSink) SetEngineState(st gpu.EngineState) {
	for _, i := range p.gpus {
		_ = p.sim.SetGPUEngineState(i, st)
	}
}

// startServingPod starts the second engine on its GPU, serving a steady
// trickle of requests of its own (two in flight at most) until the demo
// ends.
func (d *demo) startServingPod() error {
	if d.servingSrv == nil {
		return nil
	}
	cfg := d.cfg.Engine
	cfg.Model = ServingModel
	eng, err := simengine.New(cfg, podSink{d.sim, d.layout.serving})
	if err != nil {
		return err
	}
	d.servingEng = eng
	mux := http.NewServeMux()
	mux.Handle("/", eng.Handler(nil))
	mux.Handle("GET /metrics", promhttp.HandlerFor(labelGatherer{eng.Registry(), engineLabels(ServingPod)}, promhttp.HandlerOpts{}))
	d.servingSrv.serve(mux)
	if err := eng.Start(); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(d.compCtx)
	done := make(chan struct{})
	d.onClose(func() error {
		cancel()
		<-done
		sctx, c := context.WithTimeout(context.Background(), cfg.ShutdownDelay+10*time.Second)
		defer c()
		return eng.Stop(sctx)
	})
	go func() {
		defer close(done)
		d.serveTraffic(ctx, d.servingSrv.url+"/v1/completions")
	}()
	return nil
}

// serveTraffic sends small completions to url, two at a time, until ctx
// ends; failures (the engine still loading) are retried a moment later.
func (d *demo) serveTraffic(ctx context.Context, url string) {
	body := fmt.Sprintf(`{"model": %q, "prompt": "tell me about GPU energy", "max_tokens": 16}`, ServingModel)
	client := &http.Client{Timeout: 30 * time.Second}
	var wg sync.WaitGroup
	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
				if err != nil {
					return
				}
				req.Header.Set("Content-Type", "application/json")
				resp, err := client.Do(req)
				if err == nil {
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
				if err != nil || resp.StatusCode != http.StatusOK {
					_ = ctxtime.Sleep(ctx, 200*time.Millisecond+time.Duration(w)*50*time.Millisecond)
				}
			}
		}()
	}
	wg.Wait()
}
