package simengine

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"
)

func TestFaults(t *testing.T) {
	body := map[string]any{"prompt": "a b c", "max_tokens": 20, "ignore_eos": true, "stream": true,
		"stream_options": map[string]any{"include_usage": true}}
	tests := []struct {
		name   string
		faults Faults
		kind   string
		check  func(t *testing.T, r sseResult)
	}{
		{
			name: "truncate", faults: Faults{TruncateRate: 1}, kind: "truncate",
			check: func(t *testing.T, r sseResult) {
				if r.done() || r.usage != nil || r.finish != "" || r.chunksTok >= 20 {
					t.Errorf("cut stream: done %v usage %v finish %q tokens %d", r.done(), r.usage, r.finish, r.chunksTok)
				}
				if r.readErr == nil {
					t.Error("cut stream read without error; want an unexpected EOF")
				}
			},
		},
		{
			name: "slow first token", faults: Faults{SlowFirstTokenRate: 1, SlowFirstTokenDelay: 200 * time.Millisecond}, kind: "slow_first_token",
			check: func(t *testing.T, r sseResult) {
				if r.ttft() < 200*time.Millisecond || !r.done() {
					t.Errorf("TTFT %s (delay 200 ms), done %v", r.ttft(), r.done())
				}
				if r.end.Sub(r.firstTok) > 150*time.Millisecond {
					t.Errorf("decode took %s after the slow first token; only the first token should be late", r.end.Sub(r.firstTok))
				}
			},
		},
		{
			name: "stall", faults: Faults{StallRate: 1, StallDuration: 200 * time.Millisecond}, kind: "stall",
			check: func(t *testing.T, r sseResult) {
				if r.ttft() > 100*time.Millisecond {
					t.Errorf("TTFT %s: a stall comes after the first token", r.ttft())
				}
				if lat := r.end.Sub(r.sent); lat < 200*time.Millisecond || !r.done() || r.chunksTok != 20 {
					t.Errorf("latency %s (stall 200 ms), done %v, %d tokens", lat, r.done(), r.chunksTok)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, srv := startEngine(t, func(c *Config) { c.Faults = tt.faults })
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			sent := time.Now()
			resp := post(t, ctx, srv.URL+"/v1/completions", body)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d", resp.StatusCode)
			}
			tt.check(t, readSSE(t, resp, sent))
			log := e.FaultLog()
			if len(log) != 1 || log[0].Kind != tt.kind {
				t.Errorf("fault log %+v, want one %s", log, tt.kind)
			}
		})
	}
}

func TestErrorFault(t *testing.T) {
	e, srv := startEngine(t, func(c *Config) { c.Faults.ErrorRate = 0.5; c.Seed = 3 })
	errs := 0
	const n = 200
	for range n {
		resp := post(t, context.Background(), srv.URL+"/v1/completions", map[string]any{"prompt": "a", "max_tokens": 1})
		if resp.StatusCode == http.StatusInternalServerError {
			var doc apiError
			if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil || doc.Error.Type != "InternalServerError" {
				t.Errorf("error body %+v, %v", doc, err)
			}
			errs++
		} else if resp.StatusCode != http.StatusOK {
			t.Errorf("status %d", resp.StatusCode)
		}
		resp.Body.Close()
	}
	// Binomial(200, 0.5): mean 100, sd ≈ 7.
	if errs < 70 || errs > 130 {
		t.Errorf("%d errors of %d at rate 0.5", errs, n)
	}
	if got := len(e.FaultLog()); got != errs {
		t.Errorf("fault log has %d entries, %d errors answered", got, errs)
	}
}

func TestFaultsReproducibleFromSeed(t *testing.T) {
	run := func() []int {
		e, srv := startEngine(t, func(c *Config) { c.Faults.ErrorRate = 0.3; c.Seed = 11 })
		var out []int
		for range 30 {
			resp := post(t, context.Background(), srv.URL+"/v1/completions", map[string]any{"prompt": "a", "max_tokens": 1})
			resp.Body.Close()
			out = append(out, resp.StatusCode)
		}
		_ = e
		return out
	}
	a, b := run(), run()
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("same seed, different faults: %v vs %v", a, b)
		}
	}
}
