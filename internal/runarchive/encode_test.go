package runarchive

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"testing"
)

// jsonLine is the line encoding/json's Encoder writes for r.
func jsonLine(t *testing.T, r *Request) (string, error) {
	t.Helper()
	var b bytes.Buffer
	err := json.NewEncoder(&b).Encode(r)
	return b.String(), err
}

// checkLine: appendRequest writes encoding/json's line, or declines
// (false) only where a float is not finite, which encoding/json refuses.
func checkLine(t *testing.T, r *Request) {
	t.Helper()
	want, err := jsonLine(t, r)
	got, ok := appendRequest([]byte("x"), r)
	if !ok {
		if err == nil || finiteFloats(r) {
			t.Fatalf("appendRequest declined %+v, encoding/json wrote %s", r, want)
		}
		return
	}
	if err != nil {
		t.Fatalf("appendRequest wrote %s where encoding/json failed: %v", got, err)
	}
	if string(got[1:]) != want || got[0] != 'x' {
		t.Fatalf("appendRequest:\n%s\nencoding/json:\n%s", got, want)
	}
}

// finiteFloats: every float of r is finite.
func finiteFloats(r *Request) bool {
	fs := append([]float64{r.SendTime, r.EndTime, r.LatencySeconds, r.RetryAfterSeconds}, r.ITLSeconds...)
	for _, p := range []*float64{r.FirstTokenTime, r.TTFTSeconds, r.TPOTSeconds, r.ScheduledTime} {
		if p != nil {
			fs = append(fs, *p)
		}
	}
	for _, f := range fs {
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return false
		}
	}
	return true
}

// TestAppendRequest: the full request, the empty one and the edges of
// the float format, as encoding/json writes them.
func TestAppendRequest(t *testing.T) {
	if n := reflect.TypeFor[Request]().NumField(); n != 28 {
		t.Fatalf("Request has %d fields: appendRequest writes 28; add the new one there", n)
	}
	full := fullRequest(2)
	checkLine(t, full)
	if _, ok := appendRequest(nil, full); !ok {
		t.Fatal("appendRequest declined the full request")
	}
	checkLine(t, &Request{})
	checkLine(t, &Request{ITLSeconds: []float64{}, Quality: &QualityResult{Pass: true, Failed: []string{}}})
	for _, f := range []float64{1e-6, 9.99e-7, 1e21, 1e20, -1e-7, 5e-324, math.MaxFloat64, math.Copysign(0, -1), 1.5e-9, 123456789.125} {
		checkLine(t, &Request{SendTime: f, ITLSeconds: []float64{f, -f}, TTFTSeconds: &f, RetryAfterSeconds: f})
	}
	for _, s := range []string{`a"b`, `a\b`, "<", ">", "&", "\n", "\x7f", "é", "\u2028", "\xff"} {
		checkLine(t, &Request{Error: s, Model: s, Quality: &QualityResult{Failed: []string{s, s}}})
	}
	if _, ok := appendRequest(nil, &Request{ITLSeconds: []float64{math.NaN()}}); ok {
		t.Error("appendRequest wrote a NaN")
	}
}

// FuzzAppendRequest: appendRequest against encoding/json on fuzzed values.
func FuzzAppendRequest(f *testing.F) {
	f.Add("formal", "m", "ab12", "timeout", 3, 1.7e9, 0.125, -1e-7, 2.5, true, true)
	f.Add("", "<m>", "\xff", "a\"b", -1, 1e21, 0.0, 1e-320, math.Copysign(0, -1), false, false)
	f.Fuzz(func(t *testing.T, phase, model, hash, errText string, n int, a, b, c, d float64, ok, ptrs bool) {
		r := &Request{Phase: phase, Slot: n, SendTime: a, EndTime: b, LatencySeconds: c, RetryAfterSeconds: d,
			OutputTokens: -n, TokensSource: hash, Success: ok, Error: errText, FinishReason: model,
			ITLSeconds: []float64{a, b, c, d}, Index: n * 3, ErrorClass: phase, StatusCode: n % 600, Model: model,
			Chunks: n, OutputHash: hash, MaxTokens: n / 2}
		if ptrs {
			r.FirstTokenTime, r.TTFTSeconds, r.TPOTSeconds, r.ScheduledTime, r.OutputChars = &a, &b, &c, &d, &n
			r.Quality = &QualityResult{Pass: ok, Failed: []string{phase, model}, Mismatches: n % 2}
		}
		checkLine(t, r)
	})
}
