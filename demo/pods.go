package demo

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/common/config"

	"github.com/joulemark/joulemark/exporter"
	"github.com/joulemark/joulemark/podresources"
	"github.com/joulemark/joulemark/production"
	"github.com/joulemark/joulemark/simengine"
)

// The demo's simulated cluster, as the fake kubelet tells the exporter: the
// benchmarked engine runs as pod EnginePod on every GPU but the last two,
// a second replica of the model (IdlePod) holds the next-to-last GPU and
// serves nothing, the last GPU is unallocated. With fewer than 3 GPUs the
// engine holds them all. The engines' tokens join the exporter's per-pod
// energy on namespace and pod in the recording rules and in the
// production report.
const (
	PodNamespace  = "joulemark-demo"
	EnginePod     = "sim-engine-0"
	IdlePod       = "sim-engine-1"
	gpuResource   = "nvidia.com/gpu"
	productionDir = "production"
)

// layout is which simulated GPU indexes each pod holds.
type layout struct {
	engine, idle []int
}

func newLayout(gpus int) layout {
	var l layout
	n := gpus
	if gpus >= 3 {
		n = gpus - 2
		l.idle = []int{gpus - 2}
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

// detachOthers keeps the GPUs the engine does not hold at idle, whatever it
// does.
func (d *demo) detachOthers() error {
	for i := d.cfg.GPUs - 1; i >= len(d.layout.engine); i-- {
		if err := d.sim.SetGPUAttached(i, false); err != nil {
			return err
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
func (nopSink) SetEngineState(simengine.State) {}

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
		From: exporter.Time(idle.Start), To: exporter.Time(rel.End), OutDir: out, QueryTimeout: time.Minute,
	})
	if err != nil {
		return fmt.Errorf("production view: %w", err)
	}
	d.res.Production, d.res.ProductionDir = pr, out
	fmt.Fprintf(d.cfg.Out, "\nProduction view of the same span (joulemark analyze production; %s):\n\n", out)
	return production.WriteMarkdown(d.cfg.Out, pr)
}
