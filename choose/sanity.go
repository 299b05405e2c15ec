package choose

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// Sanity counts the outputs of a run's successful formal requests that say
// the model or engine broke, whatever the speed: empty outputs, outputs
// identical to an earlier one, and outputs shorter than asked (an early stop
// when ignore_eos was meant to hold the length).
type Sanity struct {
	Requests int `json:"requests"` // successful formal requests examined
	Empty    int `json:"empty"`    // no output token (or empty text)
	// Repeated counts outputs whose content hash equals an earlier output's in
	// the same run; nil when the archive carries no output hash.
	Repeated *int `json:"repeated"`
	// Short counts outputs shorter than the requested max tokens (or, when the
	// archive does not record it, ended by a stop/EOS rather than by length);
	// nil when neither is recorded.
	Short *int `json:"short"`
}

// requestRecord is the part of one runs/<run_id>/requests.jsonl line the
// sanity counts read (DESIGN.md, "Run archive").
type requestRecord struct {
	Phase        string `json:"phase"`
	Success      bool   `json:"success"`
	OutputTokens *int64 `json:"output_tokens"`
	FinishReason string `json:"finish_reason"`
	// Output fingerprint and the requested length, written by benchjob.
	OutputHash  string `json:"output_hash"`
	OutputChars *int64 `json:"output_chars"`
	MaxTokens   *int64 `json:"max_tokens"`
}

// ReadSanity reads a requests.jsonl archive and counts the suspicious
// outputs among successful formal requests. A malformed line is an error
// naming its line number.
func ReadSanity(r io.Reader) (Sanity, error) {
	var s Sanity
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
		var rec requestRecord
		if err := json.Unmarshal([]byte(text), &rec); err != nil {
			return Sanity{}, fmt.Errorf("line %d: %w", line, err)
		}
		if rec.Phase != "formal" || !rec.Success {
			continue
		}
		s.Requests++
		empty := (rec.OutputTokens != nil && *rec.OutputTokens == 0) || (rec.OutputChars != nil && *rec.OutputChars == 0)
		if empty {
			s.Empty++
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
		return Sanity{}, fmt.Errorf("line %d: %w", line+1, err)
	}
	if hashKnown {
		s.Repeated = &repeated
	}
	if shortKnown {
		s.Short = &short
	}
	return s, nil
}

// Bad returns the number of suspicious outputs and whether every count was
// known.
func (s Sanity) Bad() (int, bool) {
	n := s.Empty
	known := true
	if s.Repeated != nil {
		n += *s.Repeated
	} else {
		known = false
	}
	if s.Short != nil {
		n += *s.Short
	} else {
		known = false
	}
	return n, known
}

// FormatSanity prints the counts as "empty/repeated/short of n", "-" for an
// unknown count or a run without an archive.
func FormatSanity(s *Sanity) string {
	if s == nil {
		return "-"
	}
	opt := func(p *int) string {
		if p == nil {
			return "-"
		}
		return fmt.Sprint(*p)
	}
	return fmt.Sprintf("%d/%s/%s of %d", s.Empty, opt(s.Repeated), opt(s.Short), s.Requests)
}
