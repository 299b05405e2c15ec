package openai

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/joulemark/joulemark/internal/contract"
)

// TestIdleCountsOnlyContent: SSE comments and blank lines are no progress,
// a line split across reads keeps its kind (issue 33 low).
func TestIdleCountsOnlyContent(t *testing.T) {
	for _, c := range []struct {
		reads []string
		want  []bool
	}{
		{[]string{": keep-alive\n\n", ":\n", "\r\n"}, []bool{false, false, false}},
		{[]string{"data: {}\n\n"}, []bool{true}},
		{[]string{": keep", "-alive\n", "data", ": {}\n"}, []bool{false, false, true, true}},
		{[]string{"\n: x\ndata: 1\n"}, []bool{true}},
	} {
		ir := newIdleReader(nil, nil)
		for i, r := range c.reads {
			if got := ir.progress([]byte(r)); got != c.want[i] {
				t.Errorf("%q, read %d %q: progress %v, want %v", c.reads, i, r, got, c.want[i])
			}
		}
	}
}

// TestCommentTrickleIsIdle: an engine sending only SSE comments, more
// often than the idle timeout, times out idle.
func TestCommentTrickleIsIdle(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for range 40 {
			if _, err := fmt.Fprint(w, ": keep-alive\n\n"); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
				return
			case <-time.After(25 * time.Millisecond):
			}
		}
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
	defer srv.Close()
	c, err := New(Config{BaseURL: srv.URL + "/v1", IdleTimeout: 150 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	resp := c.Stream(context.Background(), &Request{Model: "m", Prompt: "x"})
	if got := ClassOf(resp.Err); got != contract.ClassTimeoutIdle {
		t.Fatalf("class %q (%v), want %q", got, resp.Err, contract.ClassTimeoutIdle)
	}
}
