package exporter

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/joulemark/joulemark/exporter/phaseapi"
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
	p, err := phaseapi.ParsePhase(r.PathValue("phase"))
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
	e.mu.Lock()
	run, err := e.startPhase(id, p, now)
	if err == nil {
		err = e.selectGPUs(run, pick, sel)
	}
	var st phaseapi.RunStatus
	if err == nil {
		st = e.status(run)
	}
	e.mu.Unlock()
	if err != nil {
		writeAPIError(w, err)
		return
	}
	e.saveActive()
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
	e.mu.Lock()
	run, err := e.endRun(id, now)
	var st phaseapi.RunStatus
	if err == nil {
		st = e.status(run)
	}
	e.mu.Unlock()
	if err != nil {
		writeAPIError(w, err)
		return
	}
	e.saveActive()
	writeJSON(w, http.StatusOK, st)
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
