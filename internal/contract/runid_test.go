package contract

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/joulemark/joulemark/internal/contract/runidtest"
)

func TestValidate(t *testing.T) {
	for _, c := range runidtest.Cases {
		err := ValidateRunID(c.ID)
		if (err == nil) != c.Valid {
			t.Errorf("ValidateRunID(%q) = %v, want valid=%v", c.ID, err, c.Valid)
		}
		if err != nil && !strings.Contains(err.Error(), RunIDGrammar) {
			t.Errorf("ValidateRunID(%q): error %q does not state the grammar", c.ID, err)
		}
	}
}

// The grammar as the regular expressions the three packages used before:
// bench and demo accepted grammarOld, the exporter grammarOld plus ':'.
// Every id any of them accepted stays valid; the table agrees with the
// union.
func TestValidateKeepsEveryEarlierValidID(t *testing.T) {
	bench := regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)
	exporter := regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$`)
	for _, c := range runidtest.Cases {
		if bench.MatchString(c.ID) && ValidateRunID(c.ID) != nil {
			t.Errorf("%q was a valid bench id and is refused", c.ID)
		}
		if exporter.MatchString(c.ID) != (ValidateRunID(c.ID) == nil) {
			t.Errorf("%q: exporter's old check and Validate disagree", c.ID)
		}
	}
}

func TestNew(t *testing.T) {
	at := time.Date(2026, 11, 30, 11, 37, 11, 0, time.FixedZone("x", 3600))
	id := newRunIDAt(at)
	if !strings.HasPrefix(id, "20261130T103711Z-") || len(id) != len("20261130T103711Z-")+12 {
		t.Errorf("newAt = %q, want 20261130T103711Z- and 12 hex digits", id)
	}
	seen := map[string]bool{}
	for range 1000 {
		id := NewRunID()
		if err := ValidateRunID(id); err != nil {
			t.Fatal(err)
		}
		if seen[id] {
			t.Fatalf("New returned %q twice", id)
		}
		seen[id] = true
	}
}
