package openai

import (
	"encoding/json"
	"strings"
	"testing"
)

// valid is the scanner's verdict on a whole document.
func valid(data []byte) bool {
	end := value(data, skipSpace(data, 0), 0)
	return end >= 0 && skipSpace(data, end) == len(data)
}

// FuzzScanValid holds the chunk scanner to encoding/json's verdict on any
// document (not only objects), and unquote to its strings' values.
func FuzzScanValid(f *testing.F) {
	for _, s := range []string{`{"a":[1,-0.5e+3,true,false,null,"x\u00e9\ud83d\ude00\ud800"]}`, ` [ ] `, `01`, `1.`, `-`, `"\u12"`,
		"\"a\x01\"", `{"a" 1}`, `[1,]`, `{"a":1,}`, `nul`, `"\/\b\f\n\r\t"`, strings.Repeat("[", 10001) + strings.Repeat("]", 10001),
		strings.Repeat("[", 10000) + strings.Repeat("]", 10000)} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if got, want := valid(data), json.Valid(data); got != want {
			t.Fatalf("%q: scanner says valid=%v, encoding/json %v", data, got, want)
		}
		i := skipSpace(data, 0)
		if i < len(data) && data[i] == '"' && valid(data) {
			var want string
			if err := json.Unmarshal(data, &want); err != nil {
				t.Fatal(err)
			}
			end := stringEnd(data, i)
			if got := string(unquote(nil, data[i+1:end-1])); got != want && !strings.ContainsRune(want, '\uFFFD') {
				t.Fatalf("%q: unquoted %q, encoding/json %q", data, got, want)
			}
		}
	})
}
