package exporter

import (
	"crypto/subtle"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/joulemark/joulemark/internal/phaseapi"
)

// MinTokenBytes is the shortest API token the exporter command accepts.
const MinTokenBytes = 16

// bearerToken returns the token of an RFC 6750 "Authorization: Bearer"
// header: the scheme is matched case-insensitively, one or more spaces
// follow it, and nothing else (a raw token, another scheme) is accepted.
func bearerToken(h string) (string, bool) {
	scheme, tok, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	tok = strings.TrimLeft(tok, " ")
	if tok == "" || strings.ContainsAny(tok, " \t") {
		return "", false
	}
	return tok, true
}

// requestToken is the token a request carries: TokenHeader (exporters
// behind basic auth, whose Authorization header the web config takes), else
// the bearer token of the Authorization header.
func requestToken(r *http.Request) (string, bool) {
	if tok := r.Header.Get(phaseapi.TokenHeader); tok != "" {
		return tok, true
	}
	return bearerToken(r.Header.Get("Authorization"))
}

// authorized checks the bearer token of a request in constant time. A
// refusal is counted and logged (at most once a second, with the remote
// address and how many were refused since the last line).
func (e *Exporter) authorized(w http.ResponseWriter, r *http.Request) bool {
	if e.cfg.APIToken == "" {
		w.Header().Set("WWW-Authenticate", `Bearer realm="joulemark"`)
		writeError(w, http.StatusUnauthorized, "the phase API is disabled: the exporter was started without --api-token-file or JOULEMARK_API_TOKEN")
		return false
	}
	tok, ok := requestToken(r)
	if ok && subtle.ConstantTimeCompare([]byte(tok), []byte(e.cfg.APIToken)) == 1 {
		return true
	}
	e.authFailures.Inc()
	e.authLog.refused(e, r)
	w.Header().Set("WWW-Authenticate", `Bearer realm="joulemark", error="invalid_token"`)
	writeError(w, http.StatusUnauthorized, "missing or wrong bearer token (want Authorization: Bearer <token>, or "+phaseapi.TokenHeader+" behind basic auth)")
	return false
}

// authLog rate-limits the log lines of refused requests.
type authLog struct {
	mu         sync.Mutex
	last       time.Time
	suppressed int
}

func (l *authLog) refused(e *Exporter, r *http.Request) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now()
	if !l.last.IsZero() && now.Sub(l.last) < time.Second {
		l.suppressed++
		return
	}
	e.log.Warn("API request refused: missing or wrong token", "remote_addr", r.RemoteAddr,
		"method", r.Method, "path", r.URL.Path, "refused_since_last_line", l.suppressed)
	l.last, l.suppressed = now, 0
}
