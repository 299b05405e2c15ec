package outputsanity

import (
	"math"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/joulemark/joulemark/internal/runarchive"
	"github.com/joulemark/joulemark/report"
)

func ip(v int) *int { return &v }

func show(c report.OutputCounts) string {
	s := Format(&c)
	if c.IgnoreEOS != nil {
		s += map[bool]string{true: " ignore_eos", false: " no ignore_eos"}[*c.IgnoreEOS]
	}
	return s
}

func bp(v bool) *bool { return &v }

func TestRead(t *testing.T) {
	const fullAndStops = `{"phase":"formal","success":true,"output_tokens":10,"max_tokens":10,"output_hash":"a","finish_reason":"length"}
{"phase":"formal","success":true,"output_tokens":0,"max_tokens":10,"output_hash":"e","finish_reason":"stop"}
{"phase":"formal","success":true,"output_tokens":10,"max_tokens":10,"output_hash":"a","finish_reason":"length"}
{"phase":"formal","success":true,"output_tokens":3,"max_tokens":10,"output_hash":"b","finish_reason":"stop"}
{"phase":"formal","success":true,"output_tokens":10,"max_tokens":10,"output_hash":"a","finish_reason":"length"}

{"phase":"warmup","success":true,"output_tokens":0,"output_hash":"a"}
{"phase":"formal","success":false,"output_tokens":0,"error":"timeout"}
`
	tests := []struct {
		name      string
		ignoreEOS *bool
		jsonl     string
		want      report.OutputCounts
	}{
		{"empty archive", nil, "", report.OutputCounts{}},
		{"ignore_eos: an early stop is short", bp(true), fullAndStops, report.OutputCounts{Requests: 5, Empty: 1, Repeated: ip(2), Short: ip(1), IgnoreEOS: bp(true)}},
		{"no ignore_eos: an early stop is the model's own", bp(false), fullAndStops, report.OutputCounts{Requests: 5, Empty: 1, Repeated: ip(2), Short: ip(0), IgnoreEOS: bp(false)}},
		{"ignore_eos unknown: stops are natural", nil, fullAndStops, report.OutputCounts{Requests: 5, Empty: 1, Repeated: ip(2), Short: ip(0)}},
		{
			"no ignore_eos: only a cut output is short, whatever the engine calls its stop",
			bp(false),
			`{"phase":"formal","success":true,"output_tokens":4,"max_tokens":10,"finish_reason":"stop"}
{"phase":"formal","success":true,"output_tokens":4,"max_tokens":10,"finish_reason":"eos_token"}
{"phase":"formal","success":true,"output_tokens":4,"max_tokens":10,"finish_reason":"stop_sequence"}
{"phase":"formal","success":true,"output_tokens":10,"max_tokens":10,"finish_reason":"length"}
{"phase":"formal","success":true,"output_tokens":4,"max_tokens":10,"finish_reason":"abort"}
{"phase":"formal","success":true,"output_tokens":4,"max_tokens":10}
`,
			report.OutputCounts{Requests: 6, Short: ip(1), IgnoreEOS: bp(false)},
		},
		{
			"ignore_eos, finish reason only: stop counts as short, length does not, repeats unknown",
			bp(true),
			`{"phase":"formal","success":true,"output_tokens":10,"finish_reason":"length"}
{"phase":"formal","success":true,"output_tokens":4,"finish_reason":"stop"}
`,
			report.OutputCounts{Requests: 2, Short: ip(1), IgnoreEOS: bp(true)},
		},
		{
			"ignore_eos: max tokens wins over finish reason: full length with stop is not short, one short with length is",
			bp(true),
			`{"phase":"formal","success":true,"output_tokens":10,"max_tokens":10,"finish_reason":"stop"}
{"phase":"formal","success":true,"output_tokens":9,"max_tokens":10,"finish_reason":"length"}
`,
			report.OutputCounts{Requests: 2, Short: ip(1), IgnoreEOS: bp(true)},
		},
		{
			"nothing to judge length by",
			nil,
			`{"phase":"formal","success":true,"output_tokens":4,"max_tokens":10}` + "\n",
			report.OutputCounts{Requests: 1},
		},
		{
			"empty by characters (reasoning only), not also repeated or short",
			bp(true),
			`{"phase":"formal","success":true,"output_tokens":5,"output_chars":0,"output_hash":"e","max_tokens":10}
{"phase":"formal","success":true,"output_tokens":5,"output_chars":0,"output_hash":"e","max_tokens":10}
`,
			report.OutputCounts{Requests: 2, Empty: 2, IgnoreEOS: bp(true)},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := read(tc.ignoreEOS, tc.jsonl)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %s, want %s", show(got), show(tc.want))
			}
		})
	}
	_, err := read(nil, "{\"phase\":\"formal\"}\n{not json\n")
	if err == nil || !strings.Contains(err.Error(), "requests.jsonl: line 2") {
		t.Errorf("malformed line: error %v, want one naming line 2", err)
	}
}

func TestReadRequests(t *testing.T) {
	tests := []struct {
		run     string
		want    report.OutputCounts
		bad     int
		ratio   float64 // NaN: nil
		wantErr string
	}{
		// 9 successful formal requests: two empty (no tokens; tokens but no
		// text), h1 once repeated, 12 and 149 of 150 tokens short (the
		// length finish does not hide the missing token; a full-length
		// "stop" is not short).
		{run: "ignore-eos", want: report.OutputCounts{Requests: 9, Empty: 2, Repeated: ip(1), Short: ip(2), TokensOverText: ip(0), IgnoreEOS: bp(true)}, bad: 5, ratio: 5.0 / 9},
		// Without ignore_eos (the manifest says so), stops are the model's
		// own: none is short.
		{run: "natural-stop", want: report.OutputCounts{Requests: 3, Repeated: ip(0), Short: ip(0), IgnoreEOS: bp(false)}, bad: 0, ratio: 0},
		{run: "partial", wantErr: "incomplete: requests.jsonl.partial"},
		{run: "missing", wantErr: "no requests.jsonl"},
		{run: "bad-line", wantErr: filepath.Join("bad-line", "requests.jsonl") + ": line 2"},
	}
	for _, tc := range tests {
		t.Run(tc.run, func(t *testing.T) {
			dir := filepath.Join("testdata", "runs", tc.run)
			if tc.run == "missing" { // an empty directory (git keeps none)
				dir = t.TempDir()
			}
			got, err := readDir(dir)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %s, want %s", show(got), show(tc.want))
			}
			if n, known := got.Bad(); n != tc.bad || !known {
				t.Errorf("Bad() = %d, %v; want %d, true", n, known, tc.bad)
			}
			if r := got.BadRatio(); r == nil || math.Abs(*r-tc.ratio) > 1e-12 {
				t.Errorf("BadRatio() = %v, want %v", r, tc.ratio)
			}
		})
	}
}

func TestBadUnknown(t *testing.T) {
	c := report.OutputCounts{Requests: 4, Empty: 1, Short: ip(1)}
	if n, known := c.Bad(); n != 2 || known {
		t.Errorf("Bad() = %d, %v; want 2, false (repeats unknown)", n, known)
	}
	if r := c.BadRatio(); r == nil || *r != 0.5 {
		t.Errorf("BadRatio() = %v, want 0.5 (a lower bound)", r)
	}
	if r := (report.OutputCounts{}).BadRatio(); r != nil {
		t.Errorf("BadRatio of no request = %v, want nil", *r)
	}
	if got := Format(&c); got != "1/-/1 of 4" {
		t.Errorf("Format = %q", got)
	}
	if got := Format(nil); got != "-" {
		t.Errorf("Format(nil) = %q", got)
	}
}

func readDir(dir string) (report.OutputCounts, error) {
	r, err := runarchive.OpenDir(dir)
	if err != nil {
		return report.OutputCounts{}, err
	}
	return ReadRequests(r)
}

// read counts the requests.jsonl lines in jsonl of a run with ignoreEOS.
func read(ignoreEOS *bool, jsonl string) (report.OutputCounts, error) {
	k := Counter{IgnoreEOS: ignoreEOS}
	err := runarchive.DecodeRequests(strings.NewReader(jsonl), runarchive.RequestsFile, func(_ int, r *runarchive.Request) error {
		k.Add(r)
		return nil
	})
	return k.Counts(), err
}

// TestTokensOverText counts an output whose reported tokens its streamed
// text cannot hold (24 tokens for 1 byte), not one within the slack
// (16 tokens or a tenth of max_tokens) nor one whose text length the
// archive lacks, and counts the first as that only (not also short).
func TestTokensOverText(t *testing.T) {
	recs := []runarchive.Request{
		{Phase: "formal", Success: true, OutputTokens: 24, OutputChars: ip(1), MaxTokens: 150, FinishReason: "abort"},
		{Phase: "formal", Success: true, OutputTokens: 17, OutputChars: ip(1), MaxTokens: 150, FinishReason: "stop"},
		{Phase: "formal", Success: true, OutputTokens: 40, OutputChars: ip(10), ReasoningChars: 20, MaxTokens: 150, FinishReason: "stop"},
		{Phase: "formal", Success: true, OutputTokens: 400, OutputChars: nil, MaxTokens: 150, FinishReason: "stop"},
	}
	var k Counter
	for i := range recs {
		k.Add(&recs[i])
	}
	c := k.Counts()
	if c.TokensOverText == nil || *c.TokensOverText != 1 || c.Short == nil || *c.Short != 0 {
		t.Fatalf("tokens over text %v, short %v: want 1 and 0", c.TokensOverText, c.Short)
	}
	if bad, _ := c.Bad(); bad != 1 {
		t.Errorf("bad %d, want 1", bad)
	}
	var none Counter
	none.Add(&recs[3])
	if got := none.Counts().TokensOverText; got != nil {
		t.Errorf("without output_chars: tokens over text %d, want unknown", *got)
	}
	if s := Sum([]report.OutputCounts{c, none.Counts()}); s.TokensOverText != nil {
		t.Errorf("sum with an unknown run: %d, want unknown", *s.TokensOverText)
	}
}
