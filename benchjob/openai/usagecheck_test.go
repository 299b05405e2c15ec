package openai

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/joulemark/joulemark/internal/contract"
)

// sseOf is an event stream of the given data lines, then [DONE].
func sseOf(lines ...string) string {
	var b strings.Builder
	for _, l := range lines {
		b.WriteString("data: " + l + "\n\n")
	}
	return b.String() + "data: [DONE]\n\n"
}

const textChunk = `{"model":"m","choices":[{"text":"ab","finish_reason":null}]}`

// TestUsageCheckedAgainstStream: a usage block that contradicts what was
// sent and streamed is invalid_usage: prompt_tokens far above the
// prompt's bytes, completion_tokens 0 for streamed content, a second
// usage block lowering the count; consistent usage stands.
func TestUsageCheckedAgainstStream(t *testing.T) {
	usage := func(p, c int) string {
		return `{"choices":[],"usage":{"prompt_tokens":` + strconv.Itoa(p) + `,"completion_tokens":` + strconv.Itoa(c) + `}}`
	}
	for _, tc := range []struct {
		name, body, want string
	}{
		{"consistent", sseOf(textChunk, textChunk, usage(20, 2)), ""},
		{"template tokens", sseOf(textChunk, usage(4000, 1)), ""},
		{"prompt tokens absurd", sseOf(textChunk, usage(1<<24, 1)), "prompt_tokens 16777216 for a prompt of 20 bytes"},
		{"zero completion with content", sseOf(textChunk, textChunk, usage(20, 0)), "completion_tokens 0 for 2 streamed content chunks"},
		{"second usage lowers", sseOf(textChunk, usage(20, 8), usage(20, 1)), "lowers completion_tokens from 8 to 1"},
	} {
		for _, viaHTTP := range []bool{false, true} {
			c := fakeClient(t, tc.body, viaHTTP)
			resp := c.Stream(context.Background(), &Request{Model: "m", Prompt: strings.Repeat("x", 20)})
			c.Close()
			switch {
			case tc.want == "" && resp.Err != nil:
				t.Errorf("%s: %v", tc.name, resp.Err)
			case tc.want != "" && (ClassOf(resp.Err) != contract.ClassInvalidUsage || !strings.Contains(resp.Err.Error(), tc.want)):
				t.Errorf("%s: %v, want invalid_usage %q", tc.name, resp.Err, tc.want)
			}
		}
	}
}
