package jsonappend

import (
	"encoding/json"
	"math"
	"testing"
)

// check: String and Float write what json.Marshal writes.
func check(t *testing.T, s string, f float64) {
	t.Helper()
	want, _ := json.Marshal(s)
	if got := String([]byte("x"), s); string(got[1:]) != string(want) {
		t.Fatalf("String(%q) = %s, encoding/json: %s", s, got[1:], want)
	}
	want, err := json.Marshal(f)
	got, ok := Float([]byte("x"), f)
	if ok != (err == nil) || ok && string(got[1:]) != string(want) || !ok && string(got) != "x" {
		t.Fatalf("Float(%v) = %s, %v; encoding/json: %s, %v", f, got, ok, want, err)
	}
}

func TestAgainstEncodingJSON(t *testing.T) {
	for _, s := range []string{"", "plain", `a"b\c`, "<a&b>", "\n\r\t\b\f\x00\x1f\x7f", "é ü 日本",
		"\u2028\u2029", "\xff", "a\xc3", "\xed\xa0\x80", "\U0001F600"} {
		check(t, s, 0)
	}
	for _, f := range []float64{0, math.Copysign(0, -1), 1, -1.5, 1e-6, 9.99e-7, 1e-7, 1e21, 1e20, 5e-324, math.MaxFloat64,
		1.5e-9, 1.7e9 + 0.125, math.NaN(), math.Inf(1), math.Inf(-1)} {
		check(t, "", f)
	}
}

func FuzzAgainstEncodingJSON(f *testing.F) {
	f.Add("a\"<\u2028\xff", 1e-7)
	f.Add("", 1e21)
	f.Fuzz(check)
}

// BenchmarkString: a synthetic prompt's length of plain text.
func BenchmarkString(b *testing.B) {
	s := "Randomly stream lines from the following text with 4 output tokens. Don't generate eos tokens:\n\n" +
		"From fairest creatures we desire increase,\nThat thereby beauty's rose might never die,\n"
	b.SetBytes(int64(len(s)))
	var dst []byte
	for b.Loop() {
		dst = String(dst[:0], s)
	}
}
