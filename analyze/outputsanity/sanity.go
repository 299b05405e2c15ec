// Package outputsanity counts a run's suspicious outputs from its bench
// archive (runs/<run_id>/requests.jsonl, written by benchjob): empty
// outputs, outputs identical to an earlier one and outputs shorter than
// asked. Speed means nothing if the model broke (docs/experiments.md,
// "Output sanity"). analyze puts the counts in the run's
// report; choose prints them beside throughput.
package outputsanity

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// Counts are the outputs of a run's successful formal requests that say
// the model or engine broke, whatever the speed: empty outputs, outputs
// identical to an earlier one, and outputs shorter than asked (an early stop
// when ignore_eos was meant to hold the length).
type Counts struct {
	Requests int `json:"requests"` // successful formal requests examined
	Empty    int `json:"empty"`    // no output token (or empty text)
	// Repeated counts outputs whose content hash equals an earlier output's in
	// the same run; nil when the archive carries no output hash.
	Repeated *int `json:"repeated"`
	// Short counts outputs shorter than the requested max tokens (or, when the
	// archive does not record it, ended by a stop/EOS rather than by length);
	// nil when neither is recorded.
	Short *int `json:"short"`
	// IgnoreEOS is the run's extras.ignore_eos from manifest.json (ReadArchive
	// only); nil when unknown. Without ignore_eos a short output may be the
	// model's natural stop rather than a fault.
	IgnoreEOS *bool `json:"ignore_eos,omitempty"`
}

// record is the part of one requests.jsonl line the counts read
// (runarchive.Request; docs/design.md, "Run archive and run id").
type record struct {
	Phase        string `json:"phase"`
	Success      bool   `json:"success"`
	OutputTokens *int64 `json:"output_tokens"`
	FinishReason string `json:"finish_reason"`
	// Output fingerprint and the requested length, written by benchjob.
	OutputHash  string `json:"output_hash"`
	OutputChars *int64 `json:"output_chars"`
	MaxTokens   *int64 `json:"max_tokens"`
}

// Read reads a requests.jsonl archive and counts the suspicious outputs
// among successful formal requests. An output that is empty is counted as
// empty only, never also as repeated or short. A malformed line is an error
// naming its line number.
func Read(r io.Reader) (Counts, error) {
	var c Counts
	var repeated, short int
	hashKnown, shortKnown := false, false
	seen := map[string]bool{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 64*1024*1024)
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" {
			continue
		}
		var rec record
		if err := json.Unmarshal([]byte(text), &rec); err != nil {
			return Counts{}, fmt.Errorf("line %d: %w", line, err)
		}
		if rec.Phase != "formal" || !rec.Success {
			continue
		}
		c.Requests++
		empty := (rec.OutputTokens != nil && *rec.OutputTokens == 0) || (rec.OutputChars != nil && *rec.OutputChars == 0)
		if empty {
			c.Empty++
			continue
		}
		if rec.OutputHash != "" {
			hashKnown = true
			if seen[rec.OutputHash] {
				repeated++
			}
			seen[rec.OutputHash] = true
		}
		switch {
		case rec.MaxTokens != nil && *rec.MaxTokens > 0 && rec.OutputTokens != nil:
			shortKnown = true
			if *rec.OutputTokens < *rec.MaxTokens {
				short++
			}
		case rec.FinishReason != "":
			shortKnown = true
			if rec.FinishReason != "length" {
				short++
			}
		}
	}
	if err := sc.Err(); err != nil {
		return Counts{}, fmt.Errorf("line %d: %w", line+1, err)
	}
	if hashKnown {
		c.Repeated = &repeated
	}
	if shortKnown {
		c.Short = &short
	}
	return c, nil
}

// Bad returns the number of suspicious outputs (empty + repeated + short)
// and whether every count was known.
func (c Counts) Bad() (int, bool) {
	n := c.Empty
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
func (c Counts) BadRatio() *float64 {
	if c.Requests == 0 {
		return nil
	}
	n, _ := c.Bad()
	v := float64(n) / float64(c.Requests)
	return &v
}

// Format prints the counts as "empty/repeated/short of n", "-" for an
// unknown count or a run without an archive (c nil).
func Format(c *Counts) string {
	if c == nil {
		return "-"
	}
	opt := func(p *int) string {
		if p == nil {
			return "-"
		}
		return fmt.Sprint(*p)
	}
	return fmt.Sprintf("%d/%s/%s of %d", c.Empty, opt(c.Repeated), opt(c.Short), c.Requests)
}
