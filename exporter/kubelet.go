package exporter

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/joulemark/joulemark/internal/gpu"
	"github.com/joulemark/joulemark/internal/podresources"
)

// Attribution methods of joulemark_pod_energy_attribution_info.
const (
	MethodExclusive = "exclusive" // one container holds the GPU
	MethodSMShare   = "sm_share"  // split by each process's SM utilization
	MethodEven      = "even"      // split evenly per device id held
	// MethodMIGSize: MIG instances, each holder's share the size (SMs) of
	// the instances it holds over all of the GPU's; instances nobody holds
	// count as unallocated. A lone instance is a slice, never exclusive.
	MethodMIGSize = "mig_size"
)

// AllocationLister lists the devices each container holds
// (*podresources.Client, or a test double).
type AllocationLister interface {
	List(ctx context.Context) ([]podresources.Allocation, error)
}

// PodConfig turns on energy attribution to pods.
type PodConfig struct {
	// Lister reads the kubelet's allocations.
	Lister AllocationLister
	// Refresh is how often allocations are read. Zero Refresh, ProcRoot
	// and Checkpoint take KubeletDefaults' (the command refuses a zero
	// flag for them).
	Refresh time.Duration
	// ProcRoot is where /proc is mounted, to map processes to pods through
	// their cgroup.
	ProcRoot string
	// Checkpoint is the kubelet's device checkpoint, to map pod UIDs to
	// names.
	Checkpoint string
	// KeepScrapes is how many scrapes a vanished container's energy counter
	// stays on /metrics (default 3).
	KeepScrapes int
}

// attributor splits each GPU's energy among the containers holding it, at
// the sampling rate. Lock order: Exporter.mu before attributor.mu.
type attributor struct {
	cfg     PodConfig
	log     *slog.Logger
	backend gpu.Backend
	ngpu    int
	// refreshed is called after each refresh, without a.mu held (the
	// exporter notes runs' co-tenants; it takes Exporter.mu).
	refreshed func()

	mu      sync.Mutex
	known   bool // a List has succeeded
	up      bool
	listed  bool // a List has been tried
	errs    uint64
	gpus    []gpuAttrib
	pods    map[podresources.PodRef]*podEnergy
	rows    []allocRow
	uuids   map[string]int // GPU UUID -> index, GPUs opened after start included (syncUUIDs)
	migs    map[string]migRef
	migList [][]gpu.MIGInstance // per GPU, its MIG instances (loadMIGs)
	migSize []float64           // per GPU, the size of all its MIG instances (gpu.MIGInstance.Weight)
	uidRefs map[string][]podresources.PodRef
	cpErr   string // last checkpoint error logged
}

type gpuAttrib struct {
	weights map[podresources.PodRef]float64 // device ids held (MIG: instance sizes), for the even split
	shares  []holderShare
	method  string
	unalloc float64
	mig     bool    // held through MIG instances: no per-process split
	migSize float64 // with mig: the size of all the GPU's instances
}

// migRef is the GPU a MIG instance is on and its size.
type migRef struct {
	gpu    int
	weight float64
}

type holderShare struct {
	ref   podresources.PodRef
	share float64
}

type podEnergy struct {
	joules  float64
	present bool
	gone    int // scrapes since it vanished
}

type allocRow struct {
	gpu      int
	ref      podresources.PodRef
	resource string
	shared   bool
}

func newAttributor(cfg PodConfig, backend gpu.Backend, log *slog.Logger) (*attributor, error) {
	if cfg.Lister == nil {
		return nil, errors.New("exporter: pod attribution needs a kubelet lister")
	}
	d := KubeletDefaults()
	cfg.Refresh = cmp.Or(cfg.Refresh, d.Refresh)
	if cfg.Refresh < 0 {
		return nil, fmt.Errorf("exporter: kubelet refresh interval %v: want > 0", cfg.Refresh)
	}
	cfg.ProcRoot = cmp.Or(cfg.ProcRoot, d.ProcFS)
	cfg.Checkpoint = cmp.Or(cfg.Checkpoint, d.Checkpoint)
	if cfg.KeepScrapes == 0 {
		cfg.KeepScrapes = 3
	}
	devs := backend.Devices()
	a := &attributor{cfg: cfg, log: log, backend: backend, ngpu: len(devs),
		gpus: make([]gpuAttrib, len(devs)), pods: map[podresources.PodRef]*podEnergy{}}
	a.syncUUIDs()
	return a, nil
}

// syncUUIDs maps the GPUs' UUIDs to their indexes, as the backend lists
// them now: a GPU that failed to open at start has no UUID until it opens.
func (a *attributor) syncUUIDs() {
	m := map[string]int{}
	for i, d := range a.backend.Devices() {
		if d.UUID != "" && i < a.ngpu {
			m[d.UUID] = i
		}
	}
	a.mu.Lock()
	a.uuids = m
	a.mu.Unlock()
}

// add attributes de joules of GPU i, sampled now, to its holders.
func (a *attributor) add(i int, de float64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.known || i >= len(a.gpus) {
		return
	}
	g := &a.gpus[i]
	if len(g.shares) == 0 {
		g.unalloc += de
		return
	}
	left := de
	for _, h := range g.shares {
		if p := a.pods[h.ref]; p != nil {
			p.joules += de * h.share
			left -= de * h.share
		}
	}
	if g.mig && left > 1e-12*de {
		g.unalloc += left // MIG instances nobody holds
	}
}

// run refreshes allocations every Refresh and, while a GPU is shared by
// several pods, per-process shares every slow interval until ctx ends: a
// node without a shared GPU has one timer the less waking the process
// every second.
func (a *attributor) run(ctx context.Context, slow time.Duration) {
	a.refreshAndNotify(ctx)
	a.splitByProcess()
	refresh := time.NewTicker(a.cfg.Refresh)
	defer refresh.Stop()
	split := time.NewTicker(slow)
	defer split.Stop()
	splitting := a.anyShared()
	if !splitting {
		split.Stop()
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-refresh.C:
			a.refreshAndNotify(ctx)
			shared := a.anyShared()
			switch {
			case shared && !splitting:
				a.splitByProcess()
				split.Reset(slow)
			case !shared && splitting:
				split.Stop()
			}
			splitting = shared
		case <-split.C:
			a.splitByProcess()
		}
	}
}

// anyShared says a GPU is shared by several pods (not MIG): its energy is
// split by per-process utilization (splitByProcess).
func (a *attributor) anyShared() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	for i := range a.gpus {
		if g := &a.gpus[i]; len(g.weights) > 1 && !g.mig {
			return true
		}
	}
	return false
}

// refreshAndNotify refreshes and then calls refreshed.
func (a *attributor) refreshAndNotify(ctx context.Context) {
	a.refresh(ctx)
	if a.refreshed != nil {
		a.refreshed()
	}
}

// refresh reads the allocations and rebuilds each GPU's holders. A failed
// read keeps the last allocations known.
func (a *attributor) refresh(ctx context.Context) {
	allocs, err := a.cfg.Lister.List(ctx)
	a.mu.Lock()
	first := !a.listed
	a.listed = true
	if err != nil {
		a.errs++
		switch {
		case a.up || first && !errors.Is(err, podresources.ErrNoSocket):
			a.log.Warn("reading GPU allocations from the kubelet failed; keeping the last ones known, per-GPU metrics unaffected", "err", err)
		case first:
			a.log.Info("kubelet PodResources socket not found; pod attribution waits for it (not a Kubernetes node, or /var/lib/kubelet/pod-resources not mounted)", "err", err)
		}
		a.up = false
		a.mu.Unlock()
		return
	}
	if !a.up && !first {
		a.log.Info("reading GPU allocations from the kubelet works again")
	}
	a.mu.Unlock()

	a.syncUUIDs()
	if anyMIG(allocs) {
		a.loadMIGs() // every time: a layout change may only destroy instances
	}
	rows, weights, mig, bad := a.resolve(allocs)
	for _, msg := range bad {
		a.log.Debug("ignoring a kubelet device", "why", msg)
	}
	var cp []podresources.CheckpointEntry
	if slices.ContainsFunc(weights, func(w map[podresources.PodRef]float64) bool { return len(w) > 1 }) {
		cp = a.readCheckpoint()
	}

	// up and known change with the rows, under one lock: a scrape in
	// between served kubelet_up 1 without the allocations, and a sample
	// in between counted a held GPU's energy as unallocated.
	a.mu.Lock()
	defer a.mu.Unlock()
	a.up, a.known = true, true
	a.rows = rows
	if cp != nil {
		a.uidRefs = podresources.ResolveUIDs(cp, allocs)
	}
	for _, p := range a.pods {
		p.present = false
	}
	for i := range a.gpus {
		g := &a.gpus[i]
		oldSize := g.migSize
		g.mig = mig[i]
		g.migSize = 0
		if g.mig && i < len(a.migSize) {
			g.migSize = a.migSize[i]
		}
		same := maps.Equal(g.weights, weights[i]) && g.migSize == oldSize
		g.weights = weights[i]
		for ref := range g.weights {
			p := a.pods[ref]
			if p == nil {
				p = &podEnergy{}
				a.pods[ref] = p
			}
			p.present, p.gone = true, 0
		}
		if !same || g.method == "" || len(g.weights) == 0 {
			g.setEven()
		}
	}
}

// resolve maps allocations to GPU indexes.
func (a *attributor) resolve(allocs []podresources.Allocation) (rows []allocRow, weights []map[podresources.PodRef]float64, mig []bool, bad []string) {
	weights = make([]map[podresources.PodRef]float64, a.ngpu)
	mig = make([]bool, a.ngpu)
	seen := map[allocRow]bool{}
	for _, al := range allocs {
		d, err := podresources.ParseDeviceID(al.DeviceID)
		if err != nil {
			bad = append(bad, fmt.Sprintf("pod %s/%s: %v", al.Namespace, al.Pod, err))
			continue
		}
		i, w, ok := a.index(d)
		if !ok {
			bad = append(bad, fmt.Sprintf("pod %s/%s: device %s is not a GPU this exporter reads", al.Namespace, al.Pod, al.DeviceID))
			continue
		}
		ref := podresources.PodRef{Namespace: al.Namespace, Pod: al.Pod, Container: al.Container}
		if weights[i] == nil {
			weights[i] = map[podresources.PodRef]float64{}
		}
		weights[i][ref] += w
		mig[i] = mig[i] || d.MIG
		r := allocRow{gpu: i, ref: ref, resource: al.Resource, shared: d.Shared()}
		if !seen[r] {
			seen[r] = true
			rows = append(rows, r)
		}
	}
	for k, r := range rows {
		if len(weights[r.gpu]) > 1 || mig[r.gpu] {
			rows[k].shared = true
		}
	}
	return rows, weights, mig, bad
}

// index finds the GPU a device id is on, and the id's weight there: a MIG
// instance's size (kubelet_mig.go), else 1.
func (a *attributor) index(d podresources.Device) (int, float64, bool) {
	switch {
	case d.MIG:
		return a.migIndex(d)
	case d.Index >= 0:
		return d.Index, 1, d.Index < a.ngpu
	}
	a.mu.Lock()
	i, ok := a.uuids[d.UUID]
	a.mu.Unlock()
	return i, 1, ok
}

func (a *attributor) readCheckpoint() []podresources.CheckpointEntry {
	cp, err := podresources.ReadCheckpoint(a.cfg.Checkpoint)
	a.mu.Lock()
	defer a.mu.Unlock()
	if err != nil {
		if msg := err.Error(); msg != a.cpErr {
			a.cpErr = msg
			a.log.Warn("cannot map processes to pods; shared GPUs are split evenly", "err", err)
		}
		return nil
	}
	a.cpErr = ""
	return cp
}

// setEven splits the GPU by device ids held; a MIG GPU by the size of the
// instances held over all of its instances'.
func (g *gpuAttrib) setEven() {
	g.shares = g.shares[:0]
	var total float64
	for _, w := range g.weights {
		total += w
	}
	if g.mig && g.migSize >= total {
		total = g.migSize
	}
	for ref, w := range g.weights {
		g.shares = append(g.shares, holderShare{ref, w / total})
	}
	slices.SortFunc(g.shares, func(x, y holderShare) int { return cmpRef(x.ref, y.ref) })
	switch len(g.weights) {
	case 0:
		g.method = ""
	case 1:
		g.method = MethodExclusive
		if g.mig {
			g.method = MethodMIGSize
		}
	default:
		g.method = MethodEven
		if g.mig {
			g.method = MethodMIGSize
		}
	}
}

func cmpRef(x, y podresources.PodRef) int {
	return cmp.Or(cmp.Compare(x.Namespace, y.Namespace), cmp.Compare(x.Pod, y.Pod), cmp.Compare(x.Container, y.Container))
}

// splitByProcess re-splits every GPU held by several containers by each
// process's SM utilization, where the backend reports it and the
// processes map to holders; else the split stays even.
func (a *attributor) splitByProcess() {
	r, ok := a.backend.(gpu.ProcessReader)
	if !ok {
		return
	}
	a.mu.Lock()
	var shared []int // GPUs held by several pods
	for i, g := range a.gpus {
		if len(g.weights) > 1 && !g.mig {
			shared = append(shared, i)
		}
	}
	uidRefs := a.uidRefs
	a.mu.Unlock()
	for _, i := range shared {
		procs, err := r.ProcessSM(i)
		if err != nil {
			a.log.Debug("per-process utilization failed; even split", "gpu", i, "err", err)
			procs = nil
		}
		util := map[podresources.PodRef]float64{}
		for _, p := range procs {
			if p.SMPercent <= 0 {
				continue
			}
			uid, err := podresources.PodUID(a.cfg.ProcRoot, p.PID)
			if err != nil || uid == "" {
				continue
			}
			refs := uidRefs[uid]
			for _, ref := range refs {
				util[ref] += p.SMPercent / float64(len(refs))
			}
		}
		a.mu.Lock()
		g := &a.gpus[i]
		var total float64
		for ref, u := range util {
			if _, holds := g.weights[ref]; holds {
				total += u
			}
		}
		if total <= 0 {
			g.setEven()
			a.mu.Unlock()
			continue
		}
		g.shares = g.shares[:0]
		for ref := range g.weights {
			g.shares = append(g.shares, holderShare{ref, util[ref] / total})
		}
		slices.SortFunc(g.shares, func(x, y holderShare) int { return cmpRef(x.ref, y.ref) })
		g.method = MethodSMShare
		a.mu.Unlock()
	}
}

// GPUsOfPod lists the GPU indexes the pod namespace/name holds, as last
// read from the kubelet; ok is false when pod attribution is off or no
// allocation has been read.
func (e *Exporter) GPUsOfPod(namespace, pod string) (idx []int, ok bool) {
	a := e.attr
	if a == nil {
		return nil, false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.known {
		return nil, false
	}
	for _, r := range a.rows {
		if r.ref.Namespace == namespace && r.ref.Pod == pod && !slices.Contains(idx, r.gpu) {
			idx = append(idx, r.gpu)
		}
	}
	slices.Sort(idx)
	return idx, true
}

// PodsHolding lists the pods ("namespace/name", sorted) holding this
// exporter's GPUs and the GPU indexes each holds, as last read from the
// kubelet; ok is false while the allocations are unknown.
func (e *Exporter) PodsHolding() (pods map[string][]int, ok bool) {
	a := e.attr
	if a == nil {
		return nil, false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.known {
		return nil, false
	}
	pods = map[string][]int{}
	for _, r := range a.rows {
		k := r.ref.Namespace + "/" + r.ref.Pod
		if !slices.Contains(pods[k], r.gpu) {
			pods[k] = append(pods[k], r.gpu)
		}
	}
	for _, idx := range pods {
		slices.Sort(idx)
	}
	return pods, true
}
