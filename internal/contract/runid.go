// A joulemark run id: how a fresh one is made and which ids are accepted
// (the one definition). The bench, the demo, the exporter's
// phase API and the run archive all use it, so an id one of them accepts is
// accepted by every other.
//
// Grammar: 1 to 128 characters of A-Z a-z 0-9 '.' '_' ':' '-', the first a
// letter or a digit. Such an id is safe as a Prometheus label value, a URL
// path segment and a directory name (no '/', no leading '.', never "." or
// "..").
package contract

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"time"
)

// RunIDMaxLen is the longest accepted run id.
const RunIDMaxLen = 128

// RunIDGrammar describes the accepted run ids, for error and help messages.
const RunIDGrammar = "1-128 characters of A-Z a-z 0-9 . _ : - starting with a letter or digit"

// NewRunID returns a fresh run id: the UTC time to the second and 48 random bits,
// e.g. 20261130T113711Z-3f9a0c1b2d4e. It sorts by start time.
func NewRunID() string {
	return newRunIDAt(time.Now())
}

func newRunIDAt(t time.Time) string {
	var b [6]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return t.UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(b[:])
}

// ValidateRunID returns nil when id follows the grammar, else an error that
// quotes the id (cut to 64 bytes) and states the grammar.
func ValidateRunID(id string) error {
	if validRunID(id) {
		return nil
	}
	q := id
	if len(q) > 64 {
		q = q[:64] + "…"
	}
	return fmt.Errorf("run id %q: want %s", q, RunIDGrammar)
}

func validRunID(id string) bool {
	if len(id) == 0 || len(id) > RunIDMaxLen || !alnum(id[0]) {
		return false
	}
	for i := 1; i < len(id); i++ {
		if c := id[i]; !alnum(c) && c != '.' && c != '_' && c != ':' && c != '-' {
			return false
		}
	}
	return true
}

func alnum(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}
