package exporter

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"

	"github.com/joulemark/joulemark/exporter/phaseapi"
)

// maxSelectorBody bounds a phase POST's body.
const maxSelectorBody = 64 << 10

// readSelector decodes the optional GPU selector of a phase POST: an empty
// body selects nothing (every GPU).
func readSelector(r *http.Request) (*phaseapi.Selector, error) {
	b, err := io.ReadAll(io.LimitReader(r.Body, maxSelectorBody+1))
	if err != nil {
		return nil, errf(http.StatusBadRequest, "reading the request body: %v", err)
	}
	if len(b) > maxSelectorBody {
		return nil, errf(http.StatusRequestEntityTooLarge, "request body over %d bytes", maxSelectorBody)
	}
	if len(strings.TrimSpace(string(b))) == 0 {
		return nil, nil
	}
	var sel phaseapi.Selector
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&sel); err != nil {
		return nil, errf(http.StatusBadRequest, "phase body: %v (want {\"gpus\": [\"GPU-…\"]} or {\"pod\": \"namespace/name\"})", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errf(http.StatusBadRequest, "phase body: data after the JSON object")
	}
	if sel.Empty() {
		return nil, nil
	}
	if len(sel.GPUs) > 0 && sel.Pod != "" {
		return nil, errf(http.StatusBadRequest, "phase body: gpus and pod both given; give one")
	}
	return &sel, nil
}

// resolveSelector turns a selector into the GPUs it names (nil: every GPU).
// Called without e.mu held: a pod is resolved through the attributor.
func (e *Exporter) resolveSelector(sel *phaseapi.Selector) ([]bool, error) {
	if sel == nil {
		return nil, nil
	}
	pick := make([]bool, len(e.gpus))
	if sel.Pod != "" {
		ns, name, ok := strings.Cut(sel.Pod, "/")
		if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
			return nil, errf(http.StatusBadRequest, "pod %s: want namespace/name", quoteTrunc(sel.Pod))
		}
		idx, known := e.GPUsOfPod(ns, name)
		switch {
		case !known:
			return nil, errf(http.StatusConflict, "pod %s: GPU allocations are not known (the exporter reads no kubelet PodResources socket, or has not read it yet)", sel.Pod)
		case len(idx) == 0:
			return nil, errf(http.StatusConflict, "pod %s holds none of this exporter's GPUs", sel.Pod)
		}
		for _, i := range idx {
			pick[i] = true
		}
		return pick, nil
	}
	for _, u := range sel.GPUs {
		i := slices.IndexFunc(e.gpus, func(g *gpuState) bool { return g.dev.UUID == u })
		if i < 0 {
			return nil, errf(http.StatusBadRequest, "GPU %s is not one this exporter reads (GET /api/v1/gpus lists them)", quoteTrunc(u))
		}
		pick[i] = true
	}
	return pick, nil
}

// measured says whether run r measures GPU i.
func (r *run) measured(i int) bool { return r.gpus == nil || r.gpus[i] }

// errNoSelectorRestore is returned when stored selections do not fit.
var errNoSelectorRestore = errors.New("stored GPU selection does not match the GPUs")

// restoreSelection sets r.gpus from stored GPU indexes.
func restoreSelection(r *run, idx []int, n int) error {
	if len(idx) == 0 {
		return nil
	}
	r.gpus, r.selected = make([]bool, n), true
	for _, i := range idx {
		if i < 0 || i >= n {
			return fmt.Errorf("%w: GPU %d of %d", errNoSelectorRestore, i, n)
		}
		r.gpus[i] = true
	}
	return nil
}

// selectionIndexes lists the GPUs r measures, nil when every GPU.
func (r *run) selectionIndexes() []int {
	if r.gpus == nil {
		return nil
	}
	var out []int
	for i, ok := range r.gpus {
		if ok {
			out = append(out, i)
		}
	}
	return out
}

// runGPUInfos lists the GPUs run r measures. Called with e.mu held.
func (e *Exporter) runGPUInfos(r *run) []phaseapi.GPUInfo {
	all := e.gpuInfos()
	out := make([]phaseapi.GPUInfo, 0, len(all))
	for i, g := range all {
		if !r.measured(i) {
			continue
		}
		if ab := r.absent[i]; ab != nil {
			// not open, or another GPU: the run's GPU is known by its UUID only
			g = phaseapi.GPUInfo{GPU: i, UUID: ab.uuid, Name: "unknown", DriverVersion: g.DriverVersion}
		}
		out = append(out, g)
	}
	return out
}

// noteCoTenants adds to run r, selected by pod and active, the other pods
// the kubelet lists as holding one of its GPUs. Called with e.mu held.
func (e *Exporter) noteCoTenants(r *run) {
	if e.attr == nil || r.ended || r.selector == nil || r.selector.Pod == "" || r.gpus == nil {
		return
	}
	ns, pod, _ := strings.Cut(r.selector.Pod, "/")
	a := e.attr
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, row := range a.rows {
		if row.gpu >= len(r.gpus) || !r.gpus[row.gpu] || row.ref.Namespace == ns && row.ref.Pod == pod {
			continue
		}
		if r.coTenants == nil {
			r.coTenants = map[string]bool{}
		}
		other := row.ref.Namespace + "/" + row.ref.Pod
		if !r.coTenants[other] {
			r.coTenants[other] = true
			e.log.Warn("another pod holds a GPU of a run selected by pod: its energy is in the run's", "run_id", r.id, "pod", r.selector.Pod, "co_tenant", other, "gpu", row.gpu)
		}
	}
}

// noteAllCoTenants runs noteCoTenants on every run, after the allocations
// were read again.
func (e *Exporter) noteAllCoTenants() {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, r := range e.lc.runs {
		e.noteCoTenants(r)
	}
}
