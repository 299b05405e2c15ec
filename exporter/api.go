package exporter

import (
	"crypto/subtle"
	"encoding/json"
	"errors"
	"net/http"
	"regexp"
	"strings"

	"github.com/joulemark/joulemark/phaseapi"
)

// validRunID bounds run IDs to what is safe as a label value, a path
// segment and a file name.
var validRunID = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$`)

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

// authorized checks the bearer token of a mutating request in constant time.
func (e *Exporter) authorized(w http.ResponseWriter, r *http.Request) bool {
	if e.cfg.APIToken == "" {
		w.Header().Set("WWW-Authenticate", `Bearer realm="joulemark"`)
		writeError(w, http.StatusUnauthorized, "the phase API is disabled: the exporter was started without --api-token-file or JOULEMARK_API_TOKEN")
		return false
	}
	tok := r.Header.Get(phaseapi.TokenHeader)
	if tok == "" {
		tok, _ = strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	}
	if tok == "" || subtle.ConstantTimeCompare([]byte(strings.TrimSpace(tok)), []byte(e.cfg.APIToken)) != 1 {
		w.Header().Set("WWW-Authenticate", `Bearer realm="joulemark"`)
		writeError(w, http.StatusUnauthorized, "missing or wrong bearer token (Authorization: Bearer, or "+phaseapi.TokenHeader+" behind basic auth)")
		return false
	}
	return true
}

func runID(w http.ResponseWriter, r *http.Request) (string, bool) {
	id := r.PathValue("run_id")
	if !validRunID.MatchString(id) {
		writeError(w, http.StatusBadRequest, "run ID "+quoteTrunc(id)+": want 1-128 characters of A-Z a-z 0-9 . _ : - starting with a letter or digit")
		return "", false
	}
	return id, true
}

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
	now := e.off(e.clock.Now())
	e.mu.Lock()
	defer e.mu.Unlock()
	run, err := e.startPhase(id, p, now)
	if err != nil {
		writeAPIError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, e.status(run))
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
	defer e.mu.Unlock()
	run, err := e.endRun(id, now)
	if err != nil {
		writeAPIError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, e.status(run))
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
		writeError(w, http.StatusNotFound, "no run "+id+" on this exporter")
		return
	}
	writeJSON(w, http.StatusOK, e.status(run))
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
