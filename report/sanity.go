package report

// OutputSanity is report.json's output_sanity: the suspicious outputs among
// the successful formal requests, counted from the bench archive's
// requests.jsonl (OutputCounts: requests, empty, repeated, short,
// ignore_eos), with their total and share.
type OutputSanity struct {
	OutputCounts
	// Bad is empty + repeated + short, over the counts that are known.
	Bad int `json:"bad"`
	// BadRatio is Bad / requests, a lower bound when repeated or short is
	// null; null when no successful formal request was found.
	BadRatio *float64 `json:"bad_ratio"`
	// MaxBadRatio is the threshold above which outputs_suspect is raised.
	MaxBadRatio float64 `json:"max_bad_ratio"`
}

// OutputCounts are the outputs of a run's successful formal requests that say
// the model or engine broke, whatever the speed: empty outputs, outputs
// identical to an earlier one, and short outputs: shorter than asked where
// ignore_eos forced the length, else cut (a finish reason that is neither
// a natural stop nor the length limit). A model's end-of-sequence stop
// without ignore_eos is normal, never short.
type OutputCounts struct {
	Requests int `json:"requests"` // successful formal requests examined
	Empty    int `json:"empty"`    // no output token (or empty text)
	// Repeated counts outputs whose content hash equals an earlier output's in
	// the same run; nil when the archive carries no output hash.
	Repeated *int `json:"repeated"`
	// Short counts, with ignore_eos on, outputs shorter than the requested
	// max tokens (or, when the archive does not record it, ended otherwise
	// than by length); without it, outputs cut: a finish reason other than
	// a natural stop or length (outputsanity.Natural). Nil when nothing it needs is
	// recorded.
	Short *int `json:"short"`
	// TokensOverText counts outputs whose engine-reported output tokens
	// exceed the bytes of text (answer and reasoning) they streamed by more
	// than contract.UsageSlack: a token carries at least one byte, so the
	// count cannot be true unless the engine emitted tokens it never sent
	// (special tokens); nil when the archive does not record the text's
	// length.
	TokensOverText *int `json:"tokens_over_text"`
	// IgnoreEOS is the run's extras.ignore_eos from manifest.json; nil when
	// unknown (counted as off: stops are then natural).
	IgnoreEOS *bool `json:"ignore_eos,omitempty"`
}

// Bad returns the number of suspicious outputs (empty + repeated + short
// + tokens over text) and whether every count was known (tokens over text
// aside: archives before it lack what it needs).
func (c OutputCounts) Bad() (int, bool) {
	n := c.Empty
	if c.TokensOverText != nil {
		n += *c.TokensOverText
	}
	known := true
	if c.Repeated != nil {
		n += *c.Repeated
	} else {
		known = false
	}
	if c.Short != nil {
		n += *c.Short
	} else {
		known = false
	}
	return n, known
}

// BadRatio is Bad()/Requests: the share of suspicious outputs, a lower
// bound when a count is unknown; nil when no request was examined.
func (c OutputCounts) BadRatio() *float64 {
	if c.Requests == 0 {
		return nil
	}
	n, _ := c.Bad()
	v := float64(n) / float64(c.Requests)
	return &v
}
