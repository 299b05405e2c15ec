package outputsanity

import (
	"bytes"
	"fmt"
	"testing"
)

// go test -run '^$' -bench . -benchmem ./report/outputsanity
func BenchmarkRead(b *testing.B) {
	var buf bytes.Buffer
	const n = 100_000
	for i := range n {
		fmt.Fprintf(&buf, `{"phase":"formal","slot":%d,"send_time":1.5,"first_token_time":1.6,"end_time":4.5,"ttft_seconds":0.1,"latency_seconds":3,"tpot_seconds":0.02,"output_tokens":150,"input_tokens":550,"tokens_source":"usage","success":true,"error":"","finish_reason":"length","itl_seconds":[0.02,0.02,0.02],"output_chars":600,"output_hash":"%064x","max_tokens":150}`+"\n", i%64, i)
	}
	data := buf.String()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		c, err := read(bp(true), data)
		if err != nil || c.Requests != n {
			b.Fatal(err, c.Requests)
		}
	}
}
