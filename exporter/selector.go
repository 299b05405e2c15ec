package exporter

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/joulemark/joulemark/internal/phaseapi"
)

// maxSelectorBody bounds a phase POST's body.
const maxSelectorBody = 64 << 10

// readSelector decodes the optional GPU selector of a phase POST: an empty
// body selects nothing (every GPU).
func readSelector(r *http.Request) (*phaseapi.Selector, error) {
	b, err := io.ReadAll(io.LimitReader(r.Body, maxSelectorBody+1))
	if err != nil {
		return nil, errf(errBadRequest, "reading the request body: %v", err)
	}
	if len(b) > maxSelectorBody {
		return nil, errf(errTooLarge, "request body over %d bytes", maxSelectorBody)
	}
	if len(strings.TrimSpace(string(b))) == 0 {
		return nil, nil
	}
	if err := exactKeys(b, "gpus", "pod"); err != nil {
		return nil, errf(errBadRequest, "phase body: %v", err)
	}
	var sel phaseapi.Selector
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&sel); err != nil {
		return nil, errf(errBadRequest, "phase body: %v (want {\"gpus\": [\"GPU-…\"]} or {\"pod\": \"namespace/name\"})", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errf(errBadRequest, "phase body: data after the JSON object")
	}
	if sel.GPUs != nil && len(sel.GPUs) == 0 {
		// An empty list would widen the run to every GPU, silently.
		return nil, errf(errBadRequest, "phase body: gpus: empty list; omit the field for all GPUs")
	}
	if sel.Empty() {
		return nil, nil
	}
	if len(sel.GPUs) > 0 && sel.Pod != "" {
		return nil, errf(errBadRequest, "phase body: gpus and pod both given; give one")
	}
	return &sel, nil
}

// exactKeys checks a JSON object's keys before it is decoded: each one of
// known, spelled exactly (encoding/json matches keys case-insensitively),
// and given once (encoding/json keeps the last of a repeated key). A body
// that is not an object is left to the decoder's error.
func exactKeys(b []byte, known ...string) error {
	dec := json.NewDecoder(strings.NewReader(string(b)))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	seen := map[string]bool{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil
		}
		k, _ := t.(string)
		switch {
		case seen[k]:
			return fmt.Errorf("key %q given twice", k)
		case !slices.Contains(known, k):
			return fmt.Errorf("unknown key %q (keys: %s, spelled so)", k, strings.Join(known, ", "))
		}
		seen[k] = true
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return nil
		}
	}
	return nil
}

// resolveSelector turns a selector into the GPUs it names (nil: every GPU).
// A pod pattern (namespace/prefix*) is replaced in sel by the one pod it
// matches. Called without e.mu held: a pod is resolved through the
// attributor.
func (e *Exporter) resolveSelector(sel *phaseapi.Selector) ([]bool, error) {
	if sel == nil {
		return nil, nil
	}
	pick := make([]bool, len(e.gpus))
	if sel.Pod != "" {
		pod, idx, err := e.resolvePod(sel.Pod)
		if err != nil {
			return nil, err
		}
		sel.Pod = pod
		for _, i := range idx {
			pick[i] = true
		}
		return pick, nil
	}
	for _, u := range sel.GPUs {
		i := slices.IndexFunc(e.gpus, func(g *gpuState) bool { return g.dev.UUID == u })
		if i < 0 {
			return nil, errf(errBadRequest, "GPU %s is not one this exporter reads (GET /api/v1/gpus lists them)", quoteTrunc(u))
		}
		pick[i] = true
	}
	return pick, nil
}

// resolvePod finds the one pod holding GPUs here that pattern
// (namespace/name or namespace/prefix*) names, and its GPU indexes; the
// refusal names the pods holding GPUs.
func (e *Exporter) resolvePod(pattern string) (string, []int, error) {
	if _, _, _, err := phaseapi.ParsePodPattern(pattern); err != nil {
		return "", nil, errf(errBadRequest, "pod %s: want namespace/name or namespace/name-prefix*", quoteTrunc(pattern))
	}
	pods, known := e.PodsHolding()
	if !known {
		return "", nil, errf(errConflict, "pod %s: GPU allocations are not known (the exporter reads no kubelet PodResources socket, or has not read it yet)", pattern)
	}
	var match []string
	for _, p := range slices.Sorted(maps.Keys(pods)) {
		if phaseapi.MatchPod(pattern, p) {
			match = append(match, p)
		}
	}
	switch len(match) {
	case 1:
		return match[0], pods[match[0]], nil
	case 0:
		err := errf(errConflict, "pod %s holds none of this exporter's GPUs (pods holding them: %s)", pattern, phaseapi.DescribePods(e.podGPUs(pods)))
		err.podAbsent = true
		return "", nil, err
	default:
		return "", nil, errf(errConflict, "pod %s matches %d pods holding this exporter's GPUs: %s; name one", pattern, len(match), strings.Join(match, ", "))
	}
}

// podGPUs lists pods by name with their GPUs' UUIDs.
func (e *Exporter) podGPUs(pods map[string][]int) []phaseapi.PodGPUs {
	out := []phaseapi.PodGPUs{}
	for _, p := range slices.Sorted(maps.Keys(pods)) {
		pg := phaseapi.PodGPUs{Pod: p, GPUs: []string{}}
		for _, i := range pods[p] {
			if i >= 0 && i < len(e.gpus) {
				pg.GPUs = append(pg.GPUs, e.gpus[i].dev.UUID)
			}
		}
		out = append(out, pg)
	}
	return out
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

// noteCoTenants adds to active run r the pods the kubelet lists as
// holding its GPUs besides its engine's: for a run selected by pod, every
// other pod; for one selected by UUID or measuring every GPU, every pod
// once two or more hold its GPUs (which one is the engine's is not known).
// A run waiting for its pod (pending) keeps who held which GPU until it
// knows its GPUs. Called with e.mu held.
func (e *Exporter) noteCoTenants(r *run) {
	if e.attr == nil || r.ended {
		return
	}
	a := e.attr
	a.mu.Lock()
	if r.heldWhilePending == nil {
		r.heldWhilePending = map[int]map[string]bool{}
	}
	for _, row := range a.rows {
		if row.gpu >= 0 && row.gpu < len(e.gpus) {
			if r.heldWhilePending[row.gpu] == nil {
				r.heldWhilePending[row.gpu] = map[string]bool{}
			}
			r.heldWhilePending[row.gpu][row.ref.Namespace+"/"+row.ref.Pod] = true
		}
	}
	a.mu.Unlock()
	if r.pending() {
		return
	}
	holders := map[string]int{}
	for i, pods := range r.heldWhilePending {
		for p := range pods {
			if r.measured(i) {
				holders[p] = i
			}
		}
	}
	r.heldWhilePending = nil
	own := ""
	if r.selector != nil {
		own = r.selector.Pod
	}
	if own == "" && len(holders) < 2 {
		return
	}
	for other, gpu := range holders {
		if other == own || r.coTenants[other] {
			continue
		}
		if r.coTenants == nil {
			r.coTenants = map[string]bool{}
		}
		r.coTenants[other] = true
		e.log.Warn("another pod holds a GPU of a run: its energy is in the run's", "run_id", r.id, "pod", own, "co_tenant", other, "gpu", gpu)
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
