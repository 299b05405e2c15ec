package exporter

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"

	"github.com/joulemark/joulemark/internal/contract"
	"github.com/joulemark/joulemark/internal/phaseapi"
)

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, phaseapi.Error{Error: msg})
}

// writeAPIError writes err with its HTTP status: a refusal's (httpStatus),
// else 500.
func writeAPIError(w http.ResponseWriter, err error) {
	var ae *apiError
	if errors.As(err, &ae) {
		writeError(w, httpStatus(ae.kind), ae.msg)
		return
	}
	writeError(w, http.StatusInternalServerError, err.Error())
}

// httpStatus is the HTTP status of a refusal of kind k.
func httpStatus(k errKind) int {
	switch k {
	case errBadRequest:
		return http.StatusBadRequest
	case errNotFound:
		return http.StatusNotFound
	case errConflict:
		return http.StatusConflict
	case errTooLarge:
		return http.StatusRequestEntityTooLarge
	case errTooManyRuns:
		return http.StatusTooManyRequests
	case errUnavailable:
		return http.StatusServiceUnavailable
	default:
		return http.StatusInternalServerError
	}
}

func runID(w http.ResponseWriter, r *http.Request) (string, bool) {
	id := r.PathValue("run_id")
	if err := contract.ValidateRunID(id); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return "", false
	}
	return id, true
}

// quoteTrunc quotes s for an error message, cut to 64 bytes.
func quoteTrunc(s string) string {
	if len(s) > 64 {
		s = s[:64] + "…"
	}
	b, _ := json.Marshal(s)
	return string(b)
}

// handleStartPhase serves POST /api/v1/runs/{run_id}/phases/{phase}.
func (e *Exporter) handleStartPhase(w http.ResponseWriter, r *http.Request) {
	if !e.authorized(w, r) {
		return
	}
	id, ok := runID(w, r)
	if !ok {
		return
	}
	p, err := contract.ParsePhase(r.PathValue("phase"))
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	sel, err := readSelector(r)
	if err != nil {
		writeAPIError(w, err)
		return
	}
	pick, absent, err := e.resolvePhaseSelector(r, p, sel)
	if err != nil {
		writeAPIError(w, err)
		return
	}
	e.changeRun(w, id, func(now int64) (*run, bool, error) {
		run, ev, err := e.lc.StartPhase(id, p, now, pick, sel, absent)
		if err == nil && (ev.selected || ev.created) {
			e.noteCoTenants(run)
		}
		return run, ev.created, err
	})
}

// resolvePhaseSelector resolves a phase's selector; a pod holding no GPU
// here is no error yet (absent): the lifecycle decides whether the run may
// wait for it. A pod selector is resolved on the kubelet's latest: the
// allocations are read again first, since a pod that held the GPUs at the
// last periodic read may be gone (or a new one may hold them).
func (e *Exporter) resolvePhaseSelector(r *http.Request, p contract.Phase, sel *phaseapi.Selector) (pick []bool, absent, err error) {
	if sel != nil && sel.Pod != "" && e.attr != nil {
		e.attr.refreshAndNotify(r.Context())
	}
	pick, err = e.resolveSelector(sel)
	var ae *apiError
	if !errors.As(err, &ae) || !ae.podAbsent {
		return pick, nil, err
	}
	return nil, err, nil
}

// handleEndRun serves POST /api/v1/runs/{run_id}/end.
func (e *Exporter) handleEndRun(w http.ResponseWriter, r *http.Request) {
	if !e.authorized(w, r) {
		return
	}
	id, ok := runID(w, r)
	if !ok {
		return
	}
	e.changeRun(w, id, func(now int64) (*run, bool, error) {
		r, err := e.lc.End(id, now)
		return r, false, err
	})
}

// changeRun applies change to run id under the locks (created: it
// recorded a new run id), saves it and answers with the run's status, or
// takes it back and answers the error. The durable write happens outside
// e.mu (built under it, written after), so the samplers never wait on the
// disk; e.storeMu keeps API changes and saves in order meanwhile.
func (e *Exporter) changeRun(w http.ResponseWriter, id string, change func(now int64) (*run, bool, error)) {
	now := e.off(e.clock.Now())
	e.storeMu.Lock()
	defer e.storeMu.Unlock()
	e.mu.Lock()
	u := e.lc.undoPoint(id)
	run, created, err := change(now)
	events := e.lc.takeEvents() // logged once saved
	var pw pendingWrite
	if err == nil {
		pw = e.buildWrite(created)
	}
	e.mu.Unlock()
	if err == nil {
		err = e.writePending(pw, id)
	}
	var st phaseapi.RunStatus
	e.mu.Lock()
	if err == nil {
		st = e.status(run)
	} else {
		pw = pendingWrite{ids: e.rollback(u)}
	}
	e.mu.Unlock()
	if err != nil {
		if pw.ids != nil {
			e.rewriteRunIDs(*pw.ids, u.id)
		}
		writeAPIError(w, err)
		return
	}
	for _, ev := range events {
		e.log.Log(context.Background(), ev.level, ev.msg, ev.args...)
	}
	writeJSON(w, http.StatusOK, st)
}

// pendingWrite is the durable state a change saves before it is
// acknowledged: the run ids when it recorded one, the active runs.
type pendingWrite struct {
	ids    *runIDsDoc
	active *activeRunsDoc
}

// buildWrite builds the documents of a change (nothing without storage).
// Called with e.mu held.
func (e *Exporter) buildWrite(created bool) pendingWrite {
	if e.store == nil {
		return pendingWrite{}
	}
	doc := e.activeDoc(false)
	pw := pendingWrite{active: &doc}
	if created {
		pw.ids = &runIDsDoc{Version: runIDsVersion, RunIDs: slices.Clone(e.lc.seenOrder)}
	}
	return pw
}

// writePending writes pw, the run ids first; a failure is the 503 the
// client retries on. Called with e.storeMu held, e.mu not.
func (e *Exporter) writePending(pw pendingWrite, id string) error {
	if pw.ids != nil {
		if err := e.store.write(runIDsFile, *pw.ids); err != nil {
			e.storeErrors.Inc()
			return errf(errUnavailable, "recording run ID %s: %v; nothing was applied: retry", id, err)
		}
	}
	if pw.active == nil {
		return nil
	}
	if err := e.store.write(activeRunsFile, *pw.active); err != nil {
		e.storeErrors.Inc()
		e.log.Error("a phase change could not be saved; refused with 503 and not applied", "run_id", id, "err", err)
		return errf(errUnavailable, "the exporter could not save the change (%v); nothing was applied: retry", err)
	}
	return nil
}

// rollback takes back what changed since u (lifecycle.rollback); it
// returns the run ids to write again when some were dropped (nil: none).
// Called with e.mu held.
func (e *Exporter) rollback(u undo) *runIDsDoc {
	e.lc.takeEvents() // what was taken back did not happen
	if !e.lc.rollback(u) || e.store == nil {
		return nil
	}
	return &runIDsDoc{Version: runIDsVersion, RunIDs: slices.Clone(e.lc.seenOrder)}
}

// rewriteRunIDs writes the run ids again after a change was taken back.
// Called with e.storeMu held, e.mu not.
func (e *Exporter) rewriteRunIDs(doc runIDsDoc, id string) {
	if err := e.store.write(runIDsFile, doc); err != nil {
		e.storeErrors.Inc()
		e.log.Warn("run ID not taken back from "+runIDsFile+"; it stays used after a restart", "run_id", id, "err", err)
	}
}

// handleRun serves GET /api/v1/runs/{run_id}.
func (e *Exporter) handleRun(w http.ResponseWriter, r *http.Request) {
	id, ok := runID(w, r)
	if !ok {
		return
	}
	e.mu.RLock()
	defer e.mu.RUnlock()
	run := e.lc.Run(id)
	if run == nil {
		msg := "no run " + id + " on this exporter"
		if e.lc.Used(id) {
			msg = "run " + id + " ended and is no longer kept on this exporter (its ID stays used)"
		}
		writeError(w, http.StatusNotFound, msg)
		return
	}
	writeJSON(w, http.StatusOK, e.status(run))
}

// handlePreflight serves GET /api/v1/preflight[?run_id=ID]: the
// authenticated no-op a client calls before a run. 200 proves the token
// (and TLS, basic auth); with run_id, 409 says the id was used before.
func (e *Exporter) handlePreflight(w http.ResponseWriter, r *http.Request) {
	if !e.authorized(w, r) {
		return
	}
	id := r.URL.Query().Get("run_id")
	if id != "" {
		if err := contract.ValidateRunID(id); err != nil {
			writeError(w, http.StatusBadRequest, err.Error())
			return
		}
	}
	pf := phaseapi.Preflight{RunID: id}
	if pods, known := e.PodsHolding(); known {
		pf.AllocationsKnown, pf.Pods = true, e.podGPUs(pods)
	}
	if pod := r.URL.Query().Get("pod"); pod != "" {
		// As the first phase's selector would (bench --engine.pod).
		sel := &phaseapi.Selector{Pod: pod}
		pick, err := e.resolveSelector(sel)
		var ae *apiError
		switch {
		case err != nil && r.URL.Query().Get("wait") == "1" && errors.As(err, &ae) && ae.podAbsent:
			pf.Pod, pf.PodPending = pod, true
		case err != nil:
			writeError(w, http.StatusUnprocessableEntity, err.Error())
			return
		default:
			pf.Pod = sel.Pod
		}
		for i, g := range e.gpus {
			if pick != nil && pick[i] {
				pf.PodGPUs = append(pf.PodGPUs, g.dev.UUID)
			}
		}
	}
	e.mu.RLock()
	defer e.mu.RUnlock()
	if id != "" && e.lc.Used(id) {
		writeError(w, http.StatusConflict, "run ID "+id+" was used before on this exporter; start a new run ID")
		return
	}
	pf.GPUs = e.gpuInfos()
	writeJSON(w, http.StatusOK, pf)
}

// handleGPUs serves GET /api/v1/gpus.
func (e *Exporter) handleGPUs(w http.ResponseWriter, _ *http.Request) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	writeJSON(w, http.StatusOK, e.gpuInfos())
}

// RunStatus is the API document of run id, false when the exporter has no
// such run.
func (e *Exporter) RunStatus(id string) (phaseapi.RunStatus, bool) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	r := e.lc.Run(id)
	if r == nil {
		return phaseapi.RunStatus{}, false
	}
	return e.status(r), true
}

// handleEngineExited serves POST /api/v1/runs/{run_id}/engine-exited: the
// bench reports that the engine process it controls has exited, which
// meets the release's process criterion at that instant. Like a phase, it
// is saved before it is acknowledged (503 when it cannot be: a restart
// would lose it and the release could then only time out).
func (e *Exporter) handleEngineExited(w http.ResponseWriter, req *http.Request) {
	if !e.authorized(w, req) {
		return
	}
	id, ok := runID(w, req)
	if !ok {
		return
	}
	e.changeRun(w, id, func(now int64) (*run, bool, error) {
		r, err := e.lc.EngineExited(id, now)
		return r, false, err
	})
}
