// Package csvtest reads values back out of JSON documents the way the
// --format csv tables write them, for tests that check every cell of a CSV
// against its JSON; it shares no code with reportcsv, so it is an
// independent oracle.
package csvtest

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
)

// Decode decodes b, numbers kept as json.Number (as written), or fails t.
func Decode(t testing.TB, b []byte) any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("%v:\n%s", err, b)
	}
	return v
}

// Lookup finds a dotted key in decoded JSON v (list indices as parts) and
// returns its cell: null is empty, a list of scalars reads as its items
// joined by ";" (docs/cli.md). False when the key is missing or names an
// object.
func Lookup(v any, key string) (string, bool) {
	if key != "" {
		for _, part := range strings.Split(key, ".") {
			switch x := v.(type) {
			case map[string]any:
				var ok bool
				if v, ok = x[part]; !ok {
					return "", false
				}
			case []any:
				i, err := strconv.Atoi(part)
				if err != nil || i >= len(x) {
					return "", false
				}
				v = x[i]
			default:
				return "", false
			}
		}
	}
	switch x := v.(type) {
	case nil:
		return "", true
	case string:
		return x, true
	case json.Number:
		return x.String(), true
	case bool:
		return strconv.FormatBool(x), true
	case []any:
		var s []string
		for _, e := range x {
			c, ok := Lookup(e, "")
			if !ok {
				return "", false
			}
			s = append(s, c)
		}
		return strings.Join(s, ";"), true
	}
	return "", false
}
