package benchjob

import (
	"errors"
	"strings"
	"testing"

	"github.com/joulemark/joulemark/benchjob/openai"
)

// TestTargetHint: a 404 from a target without /v1 names the URL meant;
// other errors and targets ending in /v1 are left alone.
func TestTargetHint(t *testing.T) {
	nf := &openai.StatusError{URL: "http://h:8000/models", StatusCode: 404}
	if err := withTargetHint("http://h:8000", nf); !strings.Contains(err.Error(), "did you mean http://h:8000/v1?") || !errors.Is(err, nf) {
		t.Errorf("no /v1: %v", err)
	}
	if err := withTargetHint("http://h:8000/v1/", nf); err != nf {
		t.Errorf("with /v1: %v", err)
	}
	other := &openai.StatusError{URL: "http://h:8000/models", StatusCode: 500}
	if err := withTargetHint("http://h:8000", other); err != other {
		t.Errorf("a 500: %v", err)
	}
}
