package benchjob

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/joulemark/joulemark/benchjob/openai"
	"github.com/joulemark/joulemark/internal/runarchive"
)

// FuzzRequestPath drives random event streams and usage blocks through
// the whole request path: the client, the record, the aggregates, the
// per-request samples and the archive writer. Nothing may panic; a
// success must carry token counts that can be true (non-negative, within
// max_tokens and its slack); every record must round-trip through
// requests.jsonl.
func FuzzRequestPath(f *testing.F) {
	for _, s := range []struct {
		body, usage string
		max         uint16
	}{
		{"", `{"prompt_tokens":7,"completion_tokens":2}`, 4},
		{"", `{"completion_tokens":-1000000,"prompt_tokens":-5}`, 4},
		{"", `{"completion_tokens":1000000000000000,"prompt_tokens":7}`, 5},
		{"", `{"completion_tokens":"NaN"}`, 4},
		{"", `{"completion_tokens":2.5}`, 0},
		{"", `null`, 4},
		{"data: [DONE]\n\n", "", 4},
		{"data: {\"choices\":[{\"text\":\"a\",\"finish_reason\":\"stop\"}]}\n\n", "", 0},
		{"event: error\ndata: boom\n\n", "", 4},
		{"data: {\"choices\":[{\"delta\":{\"reasoning_content\":\"x\"}}],\"usage\":{\"completion_tokens\":1,\"completion_tokens_details\":{\"reasoning_tokens\":2}}}\n\ndata: [DONE]\n\n", "", 4},
	} {
		f.Add(s.body, s.usage, s.max)
	}
	var body atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, body.Load())
	}))
	defer srv.Close()
	client, err := openai.New(openai.Config{BaseURL: srv.URL + "/v1", TotalTimeout: 5 * time.Second})
	if err != nil {
		f.Fatal(err)
	}
	defer client.Close()
	dir := f.TempDir()
	var n atomic.Int64
	f.Fuzz(func(t *testing.T, raw, usage string, maxTokens uint16) {
		if raw == "" {
			raw = "data: {\"model\":\"m\",\"choices\":[{\"text\":\" a\"}]}\n\ndata: {\"choices\":[{\"text\":\" b\",\"finish_reason\":\"length\"}]}\n\n" +
				"data: {\"choices\":[],\"usage\":" + usage + "}\n\ndata: [DONE]\n\n"
		}
		body.Store(raw)
		p := Prompt{Index: 1, Text: "p", MaxTokens: int(maxTokens)}
		resp := client.Stream(context.Background(), &openai.Request{Model: "m", Prompt: p.Text, MaxTokens: p.MaxTokens})
		rec := newRecord("formal", 0, p, resp, time.Time{})
		checkRecord(t, rec)
		agg := newAggregates("fuzz")
		agg.observe(rec)
		checkAggregates(t, agg)
		_ = requestSamples(rec, "fuzz")
		run, err := runarchive.Create(dir, fmt.Sprintf("r%d", n.Add(1)))
		if err != nil {
			t.Fatal(err)
		}
		reqs, err := run.CreateRequests()
		if err != nil {
			t.Fatal(err)
		}
		reqs.Append(rec)
		if err := reqs.Close(); err != nil {
			t.Fatalf("archive: %v", err)
		}
		back := readOne(t, run.Dir)
		if back.Success != rec.Success || back.ErrorClass != rec.ErrorClass || back.OutputTokens != rec.OutputTokens {
			t.Fatalf("archived %+v\nwant %+v", back, rec)
		}
		_ = os.RemoveAll(run.Dir)
	})
}

// checkRecord: a success has counts that can be true; a failure has a class.
func checkRecord(t *testing.T, r *runarchive.Request) {
	t.Helper()
	if !r.Success {
		if r.ErrorClass == "" || r.OutputTokens != 0 {
			t.Fatalf("failure without class or with tokens: %+v", r)
		}
		return
	}
	if r.OutputTokens < 0 || r.InputTokens < 0 || r.ReasoningTokens < 0 || r.OutputTokens > openai.MaxUsageTokens {
		t.Fatalf("success with impossible counts: %+v", r)
	}
	if r.MaxTokens > 0 && r.TokensSource == runarchive.TokensUsage && r.OutputTokens > r.MaxTokens+openai.UsageSlack(r.MaxTokens) {
		t.Fatalf("success with %d output tokens for max_tokens %d", r.OutputTokens, r.MaxTokens)
	}
	if r.OutputTokens == 0 && r.Chunks == 0 {
		t.Fatalf("success with neither content nor tokens: %+v", r)
	}
}

// checkAggregates: every gathered value is finite and not negative.
func checkAggregates(t *testing.T, a *aggregates) {
	t.Helper()
	s, err := a.samples(0)
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range s {
		if math.IsNaN(x.Value) || math.IsInf(x.Value, 0) || (x.Value < 0 && !strings.HasSuffix(x.Labels["__name__"], "_sum")) {
			t.Fatalf("aggregate %v = %g", x.Labels, x.Value)
		}
	}
}

// readOne reads the single record of a closed requests.jsonl.
func readOne(t *testing.T, dir string) runarchive.Request {
	t.Helper()
	recs := readRequests(t, dir)
	if len(recs) == 0 {
		t.Fatal("requests.jsonl empty")
	}
	return recs[0]
}
