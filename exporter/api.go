package exporter

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/joulemark/joulemark/exporter/phaseapi"
	"github.com/joulemark/joulemark/internal/contract"
)

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, phaseapi.Error{Error: msg})
}

func writeAPIError(w http.ResponseWriter, err error) {
	var ae *apiError
	if errors.As(err, &ae) {
		writeError(w, ae.code, ae.msg)
		return
	}
	writeError(w, http.StatusInternalServerError, err.Error())
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
	pick, err := e.resolveSelector(sel)
	if err != nil {
		writeAPIError(w, err)
		return
	}
	e.changeRun(w, id, func(now int64, u undo) (*run, error) {
		run, ev, err := e.lc.StartPhase(id, p, now, pick, sel)
		if err == nil && ev.created {
			err = e.persistRunIDs(id, u.seen)
		}
		if err == nil && (ev.selected || ev.created) {
			e.noteCoTenants(run)
		}
		return run, err
	})
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
	e.changeRun(w, id, func(now int64, _ undo) (*run, error) { return e.lc.End(id, now) })
}

// changeRun applies change to run id under the locks, commits it (or takes
// it back) and answers with the run's status or the error.
func (e *Exporter) changeRun(w http.ResponseWriter, id string, change func(now int64, u undo) (*run, error)) {
	now := e.off(e.clock.Now())
	e.storeMu.Lock()
	e.mu.Lock()
	u := e.lc.undoPoint(id)
	run, err := change(now, u)
	err = e.commit(u, err)
	var st phaseapi.RunStatus
	if err == nil {
		st = e.status(run)
	}
	e.mu.Unlock()
	e.storeMu.Unlock()
	if err != nil {
		writeAPIError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, st)
}

// commit persists a change (err nil) before it is acknowledged; when the
// change failed or cannot be persisted it is taken back, and a
// persistence failure is a 503 (the client retries). Called with
// e.storeMu and e.mu held.
func (e *Exporter) commit(u undo, err error) error {
	if err == nil {
		perr := e.persistLocked()
		if perr == nil {
			e.logEvents()
			return nil
		}
		e.log.Error("a phase change could not be saved; refused with 503 and not applied", "run_id", u.id, "err", perr)
		err = errf(http.StatusServiceUnavailable, "the exporter could not save the change (%v); nothing was applied: retry", perr)
	}
	e.rollback(u)
	return err
}

// rollback takes back what changed since u (lifecycle.rollback) and
// writes the durable run ids again when some were dropped. Called with
// e.mu held.
func (e *Exporter) rollback(u undo) {
	e.lc.takeEvents() // what was taken back did not happen
	if !e.lc.rollback(u) || e.store == nil {
		return
	}
	if err := e.writeRunIDs(); err != nil {
		e.log.Warn("run ID not taken back from "+runIDsFile+"; it stays used after a restart", "run_id", u.id, "err", err)
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
		if err != nil {
			writeError(w, http.StatusUnprocessableEntity, err.Error())
			return
		}
		pf.Pod = sel.Pod
		for i, g := range e.gpus {
			if pick[i] {
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
	e.changeRun(w, id, func(now int64, _ undo) (*run, error) { return e.lc.EngineExited(id, now) })
}
