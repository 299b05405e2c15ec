package outputsanity_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/joulemark/joulemark/analyze/outputsanity"
	"github.com/joulemark/joulemark/internal/runarchive"
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
	var k outputsanity.Counter
	err := runarchive.DecodeRequests(&buf, runarchive.RequestsFile, func(_ int, r *runarchive.Request) error {
		k.Add(r)
		return nil
	})
	c := k.Counts()
	if err != nil {
		t.Fatal(err)
	}
	// 4 successful formal requests: one without answer text (empty), one
	// repeat of h1, one stopped at 12 of 150 tokens.
	if got := outputsanity.Format(&c); got != "1/1/1 of 4" {
		t.Errorf("counts = %s, want 1/1/1 of 4", got)
	}
}
