package outputsanity_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/joulemark/joulemark/internal/runarchive"
	"github.com/joulemark/joulemark/report/outputsanity"
)

// The counts read the records benchjob writes: this pins the field names
// (output_hash, output_chars, max_tokens, finish_reason) to benchjob's.
func TestReadsBenchjobRecords(t *testing.T) {
	recs := []runarchive.Request{
		{Phase: "formal", Success: true, OutputTokens: 150, MaxTokens: 150, OutputChars: new(600), OutputHash: "h1", FinishReason: "length"},
		{Phase: "formal", Success: true, OutputTokens: 150, MaxTokens: 150, OutputChars: new(600), OutputHash: "h1", FinishReason: "length"},
		{Phase: "formal", Success: true, OutputTokens: 12, MaxTokens: 150, OutputChars: new(40), OutputHash: "h2", FinishReason: "stop"},
		{Phase: "formal", Success: true, OutputTokens: 5, MaxTokens: 150, OutputChars: new(0), ReasoningChars: 30, OutputHash: "e3", FinishReason: "stop"},
		{Phase: "formal", Success: false, Error: "timeout"},
		{Phase: "warmup", Success: true, OutputTokens: 0},
	}
	var buf bytes.Buffer
	for _, r := range recs {
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		buf.Write(append(b, '\n'))
	}
	// 4 successful formal requests: one without answer text (empty), one
	// repeat of h1, one stopped at 12 of 150 tokens: short where ignore_eos
	// forced the length, the model's own stop where it did not.
	for _, tc := range []struct {
		ignoreEOS bool
		want      string
	}{{true, "1/1/1 of 4"}, {false, "1/1/0 of 4"}} {
		k := outputsanity.Counter{IgnoreEOS: &tc.ignoreEOS}
		err := runarchive.DecodeRequests(bytes.NewReader(buf.Bytes()), runarchive.RequestsFile, func(_ int, r *runarchive.Request) error {
			k.Add(r)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		c := k.Counts()
		if got := outputsanity.Format(&c); got != tc.want {
			t.Errorf("ignore_eos %v: counts = %s, want %s", tc.ignoreEOS, got, tc.want)
		}
	}
}
