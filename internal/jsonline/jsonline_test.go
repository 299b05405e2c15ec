package jsonline

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestWrap(t *testing.T) {
	for _, tc := range []struct {
		name, doc, want string // want: the prefix
	}{
		{"syntax", "{\n\"a\": 1,\n}", "line 3: "},
		{"type", "{\n\"a\":\n\"x\"}", "line 3: "},
	} {
		var v struct{ A int }
		err := json.Unmarshal([]byte(tc.doc), &v)
		got := Wrap([]byte(tc.doc), err)
		if got == nil || !strings.HasPrefix(got.Error(), tc.want) {
			t.Errorf("%s: Wrap = %v, want it to start with %q", tc.name, got, tc.want)
		}
		if !errors.Is(got, err) {
			t.Errorf("%s: Wrap does not wrap the decoder's error", tc.name)
		}
	}
	other := errors.New("other")
	if got := Wrap([]byte("{}"), other); got != other {
		t.Errorf("Wrap(other) = %v, want it unchanged", got)
	}
}
