package quality

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestWords(t *testing.T) {
	for n, want := range map[int]string{
		0: "zero", 7: "seven", 19: "nineteen", 40: "forty", 42: "forty-two", 100: "one hundred",
		105:        "one hundred and five",
		12345:      "twelve thousand, three hundred and forty-five",
		1000001:    "one million, and one",
		90_000_000: "ninety million",
		50_312_007: "fifty million, three hundred and twelve thousand, and seven",
	} {
		if got := Words(n); got != want {
			t.Errorf("Words(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestCorrectness(t *testing.T) {
	text, c := CorrectnessPrompt(1, 3)
	again, c2 := CorrectnessPrompt(1, 3)
	if text != again || c.Expect != c2.Expect || !strings.HasPrefix(text, "Convert the following sequence of words into a number: ") {
		t.Fatalf("prompt %q (%s) not deterministic or malformed", text, c.Expect)
	}
	for answer, pass := range map[string]bool{
		c.Expect:                          true,
		"The number is " + c.Expect + ".": true,
		commas(c.Expect):                  true,
		c.Expect + "0":                    false, // a longer number is not the number
		"1" + c.Expect:                    false,
		"I don't know":                    false,
	} {
		r := c.Evaluate(answer)
		if r.Pass != pass || (r.Mismatches == 1) == pass {
			t.Errorf("answer %q to %s: %+v, want pass %v", answer, c.Expect, r, pass)
		}
	}
}

func commas(d string) string {
	var b strings.Builder
	for i, r := range d {
		if i > 0 && (len(d)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	return b.String()
}

func TestRubric(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "quality.yaml")
	os.WriteFile(path, []byte(`
all:
  forbidden: ["As an AI"]
prompts:
  - index: 0
    contains_all: ["Paris", "France"]
  - index: 2
    regex: '^\d+$'
`), 0o644)
	r, err := LoadRubric(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		index  int
		answer string
		failed []string
	}{
		{0, "Paris is the capital of France.", nil},
		{0, "Paris.", []string{RuleContainsAll}},
		{0, "As an AI, I think Lyon.", []string{RuleContainsAll, RuleForbidden}},
		{1, "anything", nil},
		{1, "As an AI model", []string{RuleForbidden}},
		{2, "42", nil},
		{2, "forty-two", []string{RuleRegex}},
	} {
		got := r.For(tc.index).Evaluate(tc.answer)
		if !reflect.DeepEqual(got.Failed, tc.failed) || got.Pass != (len(tc.failed) == 0) {
			t.Errorf("prompt %d answer %q: %+v, want failed %v", tc.index, tc.answer, got, tc.failed)
		}
	}
	for _, bad := range []struct{ yaml, err string }{
		{"prompts:\n  - index: 0\n    regex: '('\n", "regex"},
		{"prompts:\n  - index: 0\n    contains: [x]\n", "field contains not found"},
		{"prompts:\n  - index: 1\n", "has no contains_all"},
		{"prompts:\n  - {index: 1, regex: a}\n  - {index: 1, regex: b}\n", "given twice"},
		{"{}\n", "neither all nor prompts"},
	} {
		if _, err := ParseRubric([]byte(bad.yaml), "q.yaml"); err == nil || !strings.Contains(err.Error(), bad.err) {
			t.Errorf("rubric %q: error %v, want %q", bad.yaml, err, bad.err)
		}
	}
}
