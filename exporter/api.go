package exporter

import (
	"encoding/json"
	"errors"
	"net/http"
	"slices"

	"github.com/joulemark/joulemark/exporter/phaseapi"
	"github.com/joulemark/joulemark/internal/contract"
	"github.com/joulemark/joulemark/internal/runid"
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
	if err := runid.Validate(id); err != nil {
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
	now := e.off(e.clock.Now())
	e.storeMu.Lock()
	e.mu.Lock()
	u := e.undoPoint(id)
	run, err := e.startPhase(id, p, now)
	if err == nil {
		err = e.selectGPUs(run, pick, sel)
	}
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

// handleEndRun serves POST /api/v1/runs/{run_id}/end.
func (e *Exporter) handleEndRun(w http.ResponseWriter, r *http.Request) {
	if !e.authorized(w, r) {
		return
	}
	id, ok := runID(w, r)
	if !ok {
		return
	}
	now := e.off(e.clock.Now())
	e.storeMu.Lock()
	e.mu.Lock()
	u := e.undoPoint(id)
	run, err := e.endRun(id, now)
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

// undo is what a phase POST or an end may change in run id, to take it
// back when it cannot be persisted.
type undo struct {
	id        string
	r         *run // nil: no such run before
	phases    int
	curEnd    *boundary
	rel       release
	gpus      []bool
	selected  bool
	selector  *phaseapi.Selector
	ended     bool
	endReason string
	seen      int
	finished  int
}

// undoPoint records run id's state before a change. Called with e.mu held.
func (e *Exporter) undoPoint(id string) undo {
	u := undo{id: id, r: e.runs[id], seen: len(e.seenOrder), finished: len(e.finished)}
	if r := u.r; r != nil {
		u.phases = len(r.phases)
		if c := r.current(); c != nil {
			u.curEnd = c.end
		}
		u.rel, u.gpus, u.selected, u.selector = r.rel, r.gpus, r.selected, r.selector
		u.ended, u.endReason = r.ended, r.endReason
	}
	return u
}

// commit persists a change (err nil) before it is acknowledged; when the
// change failed or cannot be persisted it is taken back, and a
// persistence failure is a 503 (the client retries). Called with
// e.storeMu and e.mu held.
func (e *Exporter) commit(u undo, err error) error {
	if err == nil {
		perr := e.persistLocked()
		if perr == nil {
			return nil
		}
		e.log.Error("a phase change could not be saved; refused with 503 and not applied", "run_id", u.id, "err", perr)
		err = errf(http.StatusServiceUnavailable, "the exporter could not save the change (%v); nothing was applied: retry", perr)
	}
	e.rollback(u)
	return err
}

// rollback takes back what changed since u. A finished run evicted by the
// change (--max-runs) stays evicted. Called with e.mu held.
func (e *Exporter) rollback(u undo) {
	if r := u.r; r == nil {
		delete(e.runs, u.id)
	} else {
		r.phases = r.phases[:u.phases]
		if c := r.current(); c != nil {
			c.end = u.curEnd
		}
		r.rel, r.gpus, r.selected, r.selector = u.rel, u.gpus, u.selected, u.selector
		r.ended, r.endReason = u.ended, u.endReason
	}
	if i := slices.Index(e.finished, u.id); i >= 0 && (u.r == nil || !u.ended) {
		e.finished = slices.Delete(e.finished, i, i+1)
	}
	if len(e.seenOrder) > u.seen {
		e.forgetRunIDs(u.seen)
		if e.store == nil {
			return
		}
		if err := e.writeRunIDs(); err != nil {
			e.log.Warn("run ID not taken back from "+runIDsFile+"; it stays used after a restart", "run_id", u.id, "err", err)
		}
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
	run := e.runs[id]
	if run == nil {
		msg := "no run " + id + " on this exporter"
		if _, used := e.seen[id]; used {
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
		if err := runid.Validate(id); err != nil {
			writeError(w, http.StatusBadRequest, err.Error())
			return
		}
	}
	pf := phaseapi.Preflight{RunID: id}
	if pod := r.URL.Query().Get("pod"); pod != "" {
		// As the first phase's selector would (bench --engine.pod).
		pick, err := e.resolveSelector(&phaseapi.Selector{Pod: pod})
		if err != nil {
			writeError(w, http.StatusUnprocessableEntity, err.Error())
			return
		}
		pf.Pod = pod
		for i, g := range e.gpus {
			if pick[i] {
				pf.PodGPUs = append(pf.PodGPUs, g.dev.UUID)
			}
		}
	}
	e.mu.RLock()
	defer e.mu.RUnlock()
	if _, used := e.seen[id]; id != "" && used {
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
	r := e.runs[id]
	if r == nil {
		return phaseapi.RunStatus{}, false
	}
	return e.status(r), true
}
