package simengine

import (
	"testing"
	"time"
)

// BenchmarkStreamTokens measures how fast the simulator streams tokens when
// steps cost (almost) nothing: 32 concurrent streaming completions of 256
// tokens each through real HTTP and SSE parsing. It bounds the token rate
// the simulator can emulate faithfully on a host.
//
//	go test ./simengine -run '^$' -bench StreamTokens -benchtime 5x
func BenchmarkStreamTokens(b *testing.B) {
	_, srv := startEngine(b, func(c *Config) {
		c.MaxBatch = 32
		c.DecodeBase = time.Nanosecond
		c.DecodePerSeq = 0
		c.PrefillPerToken = 0
	})
	body := map[string]any{"prompt": "a b c", "max_tokens": 256, "ignore_eos": true, "stream": true}
	start := time.Now()
	for b.Loop() {
		for _, r := range streamN(b, srv.URL, 32, body) {
			if r.chunksTok != 256 {
				b.Fatalf("%d tokens streamed, want 256", r.chunksTok)
			}
		}
	}
	b.ReportMetric(float64(b.N*32*256)/time.Since(start).Seconds(), "tokens/s")
}
