package exporter

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/joulemark/joulemark/internal/gpu"
	"github.com/joulemark/joulemark/internal/podresources"
	"github.com/joulemark/joulemark/internal/powercap"
)

// Backends of BackendConfig.Kind (joulemark exporter --gpu).
const (
	BackendNVML = "nvml"
	BackendSim  = "sim"
)

// BackendConfig selects and configures the GPU backend (joulemark
// exporter's --gpu, --gpus, --nvml.* and --sim.* flags).
type BackendConfig struct {
	Kind string `name:"gpu" enum:"nvml,sim" default:"nvml" group:"GPUs and sampling" help:"GPU backend: nvml (NVIDIA driver) or sim (simulated GPUs)."` // BackendNVML or BackendSim
	// GPUs: with nvml the first N (0: all); with sim how many (0: 8).
	GPUs              int           `name:"gpus" group:"GPUs and sampling" help:"GPUs to read: the first N with nvml (0: all); the number of simulated GPUs with sim (0: 8)."`
	NVMLInitTimeout   time.Duration `kong:"-"`
	NVMLRetryInterval time.Duration `name:"nvml.retry-interval" group:"GPUs and sampling" help:"With --gpu=nvml: how long after failing to open a GPU is opened again (listed with joulemark_gpu_up 0 meanwhile); the wait doubles after each failed attempt, up to 5m (or this, if longer)."`
	// Sim configures the simulated GPUs (its LostGPUs and CounterJumpAfter:
	// --sim.lost-gpu, --sim.counter-jump-after); its GPUs and DownAtStart
	// are set from GPUs and SimDownGPU.
	Sim          gpu.SimConfig `embed:"" prefix:"sim."`
	SimHangGPU   int           `hidden:"" name:"sim.hang-gpu" group:"Simulated GPUs" help:"Simulated GPU whose reads hang (as a hung driver call) after --sim.hang-after; -1: none."` // GPU whose reads hang after SimHangAfter; -1: none
	SimHangAfter time.Duration `hidden:"" name:"sim.hang-after" group:"Simulated GPUs" help:"When the reads of --sim.hang-gpu start hanging, after the exporter starts."`
	SimDownGPU   int           `hidden:"" name:"sim.down-gpu" group:"Simulated GPUs" help:"Simulated GPU that fails to open at start (as a GPU failing nvmlDeviceGetHandleByIndex): listed with joulemark_gpu_up 0 and no uuid until --sim.down-for has passed; -1: none."` // GPU failing to open at start; -1: none
	// SimEngineURLs drive the simulated load: a URL drives every GPU,
	// namespace/pod=URL the GPUs the pod holds in SimAllocations.
	SimEngineURLs  []string `hidden:"" name:"sim.engine-url" group:"Simulated GPUs" help:"With --gpu=sim: base URL of a simulated engine whose /metrics drive the simulated load (joulemark_sim_engine_load_ratio, joulemark_sim_engine_state); repeatable as namespace/pod=URL, each engine then driving only the GPUs its pod holds in --sim.allocations."`
	SimAllocations string   `kong:"-"`
	// Interval is the couplers' scrape period of the simulated engines.
	Interval time.Duration `kong:"-"`
}

// OpenBackend opens the GPU backend; stop ends what runs beside it (the
// simulated hang's timer; the simulated engines' couplers end with ctx).
func OpenBackend(ctx context.Context, c BackendConfig, log *slog.Logger) (b gpu.Backend, stop func(), err error) {
	switch c.Kind {
	case BackendSim:
		return openSim(ctx, c, log)
	case BackendNVML:
		switch {
		case len(c.SimEngineURLs) > 0:
			return nil, nil, errors.New("--sim.engine-url needs --gpu=sim")
		case c.SimHangGPU >= 0 || c.SimDownGPU >= 0 || len(c.Sim.LostGPUs) > 0 || c.Sim.CounterJumpAfter > 0:
			return nil, nil, errors.New("--sim.hang-gpu, --sim.down-gpu, --sim.lost-gpu and --sim.counter-jump-after need --gpu=sim")
		}
		nv, err := gpu.OpenNVML(gpu.NVMLOptions{MaxGPUs: c.GPUs, InitTimeout: c.NVMLInitTimeout, RetryInterval: c.NVMLRetryInterval, Logger: log})
		if err != nil {
			return nil, nil, err
		}
		return nv, func() {}, nil
	}
	return nil, nil, fmt.Errorf("GPU backend %q: want %s or %s", c.Kind, BackendNVML, BackendSim)
}

// openSim builds the simulated GPUs, their hang and their engines.
func openSim(ctx context.Context, c BackendConfig, log *slog.Logger) (gpu.Backend, func(), error) {
	cfg := c.Sim
	cfg.GPUs = c.GPUs
	if cfg.GPUs == 0 {
		cfg.GPUs = 8
	}
	if c.SimDownGPU >= 0 {
		cfg.DownAtStart = []int{c.SimDownGPU}
	}
	sim, err := gpu.NewSim(cfg)
	if err != nil {
		return nil, nil, err
	}
	if len(cfg.LostGPUs) > 0 {
		log.Warn("simulated GPU will be lost (--sim.lost-gpu): its reads fail with \"GPU is lost\"", "gpus", cfg.LostGPUs, "after", cfg.LostAfter, "for", cfg.LostFor)
	}
	if c.SimDownGPU >= 0 {
		log.Warn("simulated GPU fails to open at start (--sim.down-gpu); listed with joulemark_gpu_up 0", "gpu", c.SimDownGPU, "for", cfg.DownFor)
	}
	if c.SimHangGPU >= cfg.GPUs {
		return nil, nil, fmt.Errorf("--sim.hang-gpu %d: there are %d simulated GPUs", c.SimHangGPU, cfg.GPUs)
	}
	stop := func() {}
	if c.SimHangGPU >= 0 {
		hang := time.AfterFunc(c.SimHangAfter, func() {
			log.Warn("simulated GPU hangs from now on (--sim.hang-gpu)", "gpu", c.SimHangGPU)
			sim.HangGPU(c.SimHangGPU)
		})
		stop = func() { hang.Stop() }
	}
	if err := coupleSimEngines(ctx, c, sim, log); err != nil {
		stop()
		return nil, nil, err
	}
	return sim, stop, nil
}

// coupleSimEngines starts a coupler per simulated engine URL: a plain URL
// drives every simulated GPU; namespace/pod=URL drives only the GPUs that
// pod holds in SimAllocations.
func coupleSimEngines(ctx context.Context, c BackendConfig, sim *gpu.Sim, log *slog.Logger) error {
	var pods []podresources.SimPod
	for _, spec := range c.SimEngineURLs {
		pod, url, scoped := strings.Cut(spec, "=")
		if !scoped || strings.Contains(pod, "://") {
			pod, url = "", spec
		}
		cp, err := gpu.NewSimCoupler(sim, url, c.Interval)
		if err != nil {
			return fmt.Errorf("--sim.engine-url %s: %w", spec, err)
		}
		if pod != "" {
			if pods == nil {
				if c.SimAllocations == "" {
					return fmt.Errorf("--sim.engine-url %s: a pod's engine needs --sim.allocations", spec)
				}
				if pods, err = podresources.ParseSimAllocations(c.SimAllocations, len(sim.Devices())); err != nil {
					return fmt.Errorf("--sim.allocations: %w", err)
				}
			}
			i := slices.IndexFunc(pods, func(p podresources.SimPod) bool { return p.Namespace+"/"+p.Pod == pod })
			if i < 0 {
				return fmt.Errorf("--sim.engine-url %s: pod %s is not in --sim.allocations", spec, pod)
			}
			if err := cp.SetGPUs(pods[i].GPUs); err != nil {
				return err
			}
		}
		cp.SetLogger(log)
		go cp.Run(ctx)
	}
	return nil
}

// KubeletConfig configures the energy attribution to pods through the
// kubelet's PodResources API (joulemark exporter's --kubelet.* flags).
type KubeletConfig struct {
	Socket       string        `name:"kubelet.pod-resources-socket" group:"Host and pods" help:"The kubelet's PodResources socket; GPU energy is attributed to the pods holding each GPU when it is present (empty: off)."` // the PodResources socket; empty: no attribution
	Refresh      time.Duration `name:"kubelet.refresh-interval" group:"Host and pods" help:"How often GPU allocations are read from the kubelet."`
	GPUResources []string      `name:"kubelet.gpu-resource" group:"Host and pods" help:"Extended resource naming GPUs (repeatable; a trailing * matches a prefix, e.g. nvidia.com/mig-*)."`
	Checkpoint   string        `name:"kubelet.device-checkpoint-file" group:"Host and pods" help:"The kubelet's device checkpoint, mapping pod UIDs to their devices, to split a shared GPU by each process's SM utilization."`
	ProcFS       string        `name:"path.procfs" group:"Host and pods" help:"procfs mount point, to map GPU processes to pods through their cgroup."`
	// SimAllocations, with the sim backend, serves simulated pods from an
	// in-process fake kubelet instead of Socket.
	SimAllocations string `name:"sim.allocations" group:"Host and pods" help:"With --gpu=sim: simulated pods holding simulated GPUs, served by an in-process fake kubelet over the PodResources API, e.g. \"ns/pod-a=0,1;ns/pod-b=2\", or a file of such lines (replaces --kubelet.pod-resources-socket)."`
}

// KubeletDefaults is the attribution's default configuration (the
// exporter command's flags take their defaults from it; PodConfig's zero
// fields too).
func KubeletDefaults() KubeletConfig {
	return KubeletConfig{Socket: podresources.DefaultSocket, Refresh: 5 * time.Second, GPUResources: []string{"nvidia.com/gpu"},
		Checkpoint: podresources.DefaultCheckpoint, ProcFS: "/proc"}
}

// OpenPods dials the kubelet socket, or with SimAllocations starts a fake
// kubelet on a temporary socket; nil when attribution is off. devs are the
// backend's GPUs; sim says the backend is simulated.
func OpenPods(k KubeletConfig, sim bool, devs []gpu.Device) (*PodConfig, func(), error) {
	if k.SimAllocations != "" {
		return k.simKubelet(sim, devs)
	}
	if k.Socket == "" {
		return nil, func() {}, nil
	}
	cli, err := podresources.Dial(k.Socket, k.GPUResources, max(k.Refresh, time.Second))
	if err != nil {
		return nil, nil, err
	}
	return &PodConfig{Lister: cli, Refresh: k.Refresh, ProcRoot: k.ProcFS, Checkpoint: k.Checkpoint},
		func() { _ = cli.Close() }, nil
}

// simKubelet serves SimAllocations from an in-process fake kubelet.
func (k KubeletConfig) simKubelet(sim bool, devs []gpu.Device) (*PodConfig, func(), error) {
	if !sim {
		return nil, nil, errors.New("--sim.allocations needs --gpu=sim")
	}
	pods, err := podresources.ParseSimAllocations(k.SimAllocations, len(devs))
	if err != nil {
		return nil, nil, fmt.Errorf("--sim.allocations: %w", err)
	}
	dir, err := os.MkdirTemp("", "jmk-kubelet-")
	if err != nil {
		return nil, nil, fmt.Errorf("fake kubelet: %w", err)
	}
	fake, err := podresources.NewFake(filepath.Join(dir, "kubelet.sock"))
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, nil, err
	}
	uuids := make([]string, len(devs))
	for i, d := range devs {
		uuids[i] = d.UUID
	}
	fake.Set(podresources.SimAllocations(pods, uuids))
	cli, err := podresources.Dial(fake.Socket(), []string{"nvidia.com/gpu"}, max(k.Refresh, time.Second))
	if err != nil {
		_ = fake.Close()
		_ = os.RemoveAll(dir)
		return nil, nil, err
	}
	closeAll := func() {
		_ = cli.Close()
		_ = fake.Close()
		_ = os.RemoveAll(dir)
	}
	return &PodConfig{Lister: cli, Refresh: k.Refresh, ProcRoot: k.ProcFS, Checkpoint: k.Checkpoint}, closeAll, nil
}

// ProcessesBlind is why NVML's process lists cannot be trusted ("" when
// they can): with the nvml backend, an exporter outside the host's PID
// namespace (read through hostProc) sees no other container's GPU process.
func ProcessesBlind(kind, hostProc string, log *slog.Logger) string {
	if kind != BackendNVML {
		return ""
	}
	ns, err := gpu.DetectPIDNamespace(hostProc)
	if err != nil {
		why := fmt.Sprintf("the exporter's PID namespace is unknown (%v)", err)
		log.Warn("NVML process lists cannot be trusted; the release's process criterion is met unverified", "why", why)
		return why
	}
	if !ns.Host {
		log.Warn("NVML process lists are blind; the release's process criterion is met unverified", "why", ns.Why())
	}
	return ns.Why()
}

// Options is everything Main needs: the backend, the attribution to pods,
// the host's RAPL tree, the exporter's settings and where to serve.
type Options struct {
	Backend BackendConfig `embed:""`
	Kubelet KubeletConfig `embed:""`
	// PowercapPath is the powercap tree metered beside the GPUs; empty:
	// no host energy.
	PowercapPath string `name:"host.powercap-path" group:"Host and pods" help:"Powercap tree whose RAPL zones (CPU packages, DRAM) give host energy beside the GPUs; empty: no host energy."`
	// Config is the exporter's; Main sets its Backend, Host, Pods,
	// ProcessesBlind and Logger.
	Config        Config `embed:""`
	ListenAddress string `name:"web.listen-address" group:"Web and phase API" help:"Address to serve /metrics and the API on."`
	WebConfigFile string `name:"web.config.file" group:"Web and phase API" help:"Prometheus exporter-toolkit web config (TLS, basic auth) for every endpoint."`
	// GoMaxProcs caps the Go scheduler's threads running at once
	// (runtime.GOMAXPROCS); 0 leaves Go's default. The environment
	// variable GOMAXPROCS, when set, wins.
	GoMaxProcs int `name:"runtime.gomaxprocs" group:"GPUs and sampling" help:"Go threads running at once, as node_exporter's flag: 1 keeps a 100 Hz sampler under 1% of a core (docs/exporter.md); 0 leaves Go's default; the GOMAXPROCS environment variable wins when set."`
}

// setGoMaxProcs applies o.GoMaxProcs unless GOMAXPROCS is set in the
// environment, and returns the value in force.
func setGoMaxProcs(n int, log *slog.Logger) int {
	if env := os.Getenv("GOMAXPROCS"); env != "" || n <= 0 {
		return runtime.GOMAXPROCS(0)
	}
	prev := runtime.GOMAXPROCS(n)
	log.Debug("GOMAXPROCS set", "gomaxprocs", n, "was", prev)
	return n
}

// Main opens the backend, builds and starts the exporter and serves until
// ctx ends, then shuts it down (joulemark exporter).
func Main(ctx context.Context, o Options, log *slog.Logger) error {
	setGoMaxProcs(o.GoMaxProcs, log)
	backend, stop, err := openMainBackend(ctx, o.Backend, log)
	if err != nil {
		return err
	}
	defer stop()
	cfg := o.Config
	cfg.Backend, cfg.Logger = backend, log
	cfg.ProcessesBlind = ProcessesBlind(o.Backend.Kind, o.Kubelet.ProcFS, log)
	if o.PowercapPath != "" {
		cfg.Host = powercap.NewMeter(os.DirFS(o.PowercapPath))
		if ok, reason, err := cfg.Host.Status(); !ok {
			log.Warn("host energy unavailable; reports will say so instead of 0", "path", o.PowercapPath, "reason", reason, "err", err)
		}
	}
	pods, closePods, err := OpenPods(o.Kubelet, o.Backend.Kind == BackendSim, backend.Devices())
	if err != nil {
		_ = backend.Close()
		return err
	}
	defer closePods()
	cfg.Pods = pods
	exp, err := New(cfg)
	if err != nil {
		_ = backend.Close()
		return err
	}
	// bind, then withdraw the state's clean mark, then sample: an exporter
	// that cannot serve (or mark its state) exits without writing any
	ln, err := Listen(o.ListenAddress, o.WebConfigFile)
	if err == nil {
		err = exp.Begin()
		if err != nil {
			_ = ln.Close()
		}
	}
	if err != nil {
		if cerr := exp.Close(); cerr != nil {
			log.Error("closing the exporter", "err", cerr)
		}
		return err
	}
	if cfg.APIToken == "" {
		log.Warn("no API token (--web.api-token-file or JOULEMARK_API_TOKEN): the phase API is disabled")
	}
	exp.Start(ctx)
	devs := exp.Devices()
	log.Info("exporter started", "gpu_backend", o.Backend.Kind, "gpus", len(devs), "power_source", devs[0].PowerSource,
		"energy_source", devs[0].EnergySource, "interval", exp.cfg.Interval, "listen", o.ListenAddress)
	serveErr := exp.ServeOn(ctx, ln, o.WebConfigFile)
	closeErr := exp.Close()
	switch {
	case serveErr != nil:
		if closeErr != nil {
			log.Error("closing the exporter", "err", closeErr)
		}
		return serveErr
	case closeErr != nil:
		return fmt.Errorf("shutdown: %w", closeErr)
	}
	return nil
}
