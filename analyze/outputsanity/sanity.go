// Package outputsanity counts a run's suspicious outputs from its bench
// archive (runs/<run_id>/requests.jsonl, written by benchjob): empty
// outputs, outputs identical to an earlier one and short outputs (shorter
// than a length forced with ignore_eos, or cut). Speed means nothing if the model broke (docs/experiments.md,
// "Output sanity"). analyze puts the counts in the run's
// report; choose prints them beside throughput.
package outputsanity

import (
	"errors"
	"fmt"
	"slices"

	"github.com/joulemark/joulemark/internal/contract"
	"github.com/joulemark/joulemark/internal/runarchive"
)

// Counts are the outputs of a run's successful formal requests that say
// the model or engine broke, whatever the speed: empty outputs, outputs
// identical to an earlier one, and short outputs: shorter than asked where
// ignore_eos forced the length, else cut (a finish reason that is neither
// a natural stop nor the length limit). A model's end-of-sequence stop
// without ignore_eos is normal, never short.
type Counts struct {
	Requests int `json:"requests"` // successful formal requests examined
	Empty    int `json:"empty"`    // no output token (or empty text)
	// Repeated counts outputs whose content hash equals an earlier output's in
	// the same run; nil when the archive carries no output hash.
	Repeated *int `json:"repeated"`
	// Short counts, with ignore_eos on, outputs shorter than the requested
	// max tokens (or, when the archive does not record it, ended otherwise
	// than by length); without it, outputs cut: a finish reason other than
	// a natural stop or length (Natural). Nil when nothing it needs is
	// recorded.
	Short *int `json:"short"`
	// IgnoreEOS is the run's extras.ignore_eos from manifest.json; nil when
	// unknown (counted as off: stops are then natural).
	IgnoreEOS *bool `json:"ignore_eos,omitempty"`
}

// Counter counts the suspicious outputs among the successful formal
// requests it is given, in the archive's order. IgnoreEOS, the run's
// extras.ignore_eos (nil: unknown), decides what is short; set it before
// the first Add.
type Counter struct {
	IgnoreEOS             *bool
	c                     Counts
	repeated, short       int
	hashKnown, shortKnown bool
	seen                  map[string]bool
}

// Add counts one request. An output that is empty is counted as empty
// only, never also as repeated or short.
func (k *Counter) Add(r *runarchive.Request) {
	if r.Phase != string(contract.Formal) || !r.Success {
		return
	}
	k.c.Requests++
	if r.EmptyOutput() {
		k.c.Empty++
		return
	}
	if r.OutputHash != "" {
		k.hashKnown = true
		if k.seen[r.OutputHash] {
			k.repeated++
		}
		if k.seen == nil {
			k.seen = map[string]bool{}
		}
		k.seen[r.OutputHash] = true
	}
	if short, known := k.isShort(r); known {
		k.shortKnown = true
		if short {
			k.short++
		}
	}
}

// Natural are the finish reasons of an output that ended normally: the
// model's end-of-sequence or a stop string (OpenAI-compatible engines say
// stop; TGI eos_token and stop_sequence; Anthropic-style APIs end_turn)
// or the requested length (length, max_tokens).
var Natural = []string{"stop", "eos", "eos_token", "stop_sequence", "end_turn", "length", "max_tokens"}

// isShort judges one non-empty output, and whether it could: with
// ignore_eos on, shorter than max_tokens (without it, not ended by
// length); otherwise only a finish reason that is not Natural (abort, a
// cancellation) is short: a stop before max_tokens is the model's own.
func (k *Counter) isShort(r *runarchive.Request) (short, known bool) {
	forced := k.IgnoreEOS != nil && *k.IgnoreEOS
	switch {
	case forced && r.MaxTokens > 0:
		return r.OutputTokens < r.MaxTokens, true
	case forced && r.FinishReason != "":
		return r.FinishReason != "length", true
	case r.FinishReason != "":
		return !slices.Contains(Natural, r.FinishReason), true
	}
	return false, false
}

// Counts are the counts so far; Repeated and Short are nil while nothing
// told them.
func (k *Counter) Counts() Counts {
	c := k.c
	c.IgnoreEOS = k.IgnoreEOS
	if k.hashKnown {
		c.Repeated = new(k.repeated)
	}
	if k.shortKnown {
		c.Short = new(k.short)
	}
	return c
}

// ReadRequests counts the suspicious outputs of the bench run in r, from
// its requests.jsonl, with its manifest's ignore_eos (unknown without a
// manifest). Errors name the file and line.
func ReadRequests(r *runarchive.Run) (Counts, error) {
	var k Counter
	m, err := r.ReadManifest()
	switch {
	case errors.Is(err, runarchive.ErrNoManifest):
	case err != nil:
		return Counts{}, err
	default:
		k.IgnoreEOS = m.IgnoreEOS()
	}
	err = r.EachRequest(func(_ int, req *runarchive.Request) error {
		k.Add(req)
		return nil
	})
	if err != nil {
		return Counts{}, err
	}
	return k.Counts(), nil
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

// Sum adds up the counts of several runs (a repetition group's): requests
// and empty outputs add; repeated and short add where every run has them
// (repeated stays within each run), else they are unknown; ignore_eos is
// kept where every run agrees.
func Sum(cs []Counts) Counts {
	var out Counts
	if len(cs) == 0 {
		return out
	}
	repeated, short := 0, 0
	repeatedKnown, shortKnown := true, true
	out.IgnoreEOS = cs[0].IgnoreEOS
	for _, c := range cs {
		out.Requests += c.Requests
		out.Empty += c.Empty
		if c.Repeated == nil {
			repeatedKnown = false
		} else {
			repeated += *c.Repeated
		}
		if c.Short == nil {
			shortKnown = false
		} else {
			short += *c.Short
		}
		if c.IgnoreEOS == nil || out.IgnoreEOS == nil || *c.IgnoreEOS != *out.IgnoreEOS {
			out.IgnoreEOS = nil
		}
	}
	if repeatedKnown {
		out.Repeated = &repeated
	}
	if shortKnown {
		out.Short = &short
	}
	return out
}
