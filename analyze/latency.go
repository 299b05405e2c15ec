package analyze

// tpot is (latency − TTFT)/(output tokens − 1); ok is false when the request
// has no TTFT or fewer than two output tokens.
func tpot(r Request) (float64, bool) {
	if !r.HasTTFT || r.OutputTokens < 2 {
		return 0, false
	}
	return (r.Latency - r.TTFT) / float64(r.OutputTokens-1), true
}
