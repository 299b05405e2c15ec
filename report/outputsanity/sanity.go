// Package outputsanity counts a run's suspicious outputs from its bench
// archive (runs/<run_id>/requests.jsonl, written by benchjob): empty
// outputs, outputs identical to an earlier one and short outputs (shorter
// than a length forced with ignore_eos, or cut). Speed means nothing if the model broke (docs/experiments.md,
// "Output sanity"). analyze puts the counts in the run's
// report; runset prints them beside throughput.
package outputsanity

import (
	"errors"
	"fmt"
	"slices"

	"github.com/joulemark/joulemark/internal/contract"
	"github.com/joulemark/joulemark/internal/runarchive"
	"github.com/joulemark/joulemark/report"
)

// Counter counts the suspicious outputs among the successful formal
// requests it is given, in the archive's order. IgnoreEOS, the run's
// extras.ignore_eos (nil: unknown), decides what is short; set it before
// the first Add.
type Counter struct {
	IgnoreEOS             *bool
	c                     report.OutputCounts
	repeated, short, over int
	hashKnown, shortKnown bool
	overKnown             bool
	seen                  map[string]bool
}

// Add counts one request. An output that is empty is counted as empty
// only, one with more tokens than its text can hold as that only, never
// also as repeated or short.
func (k *Counter) Add(r *runarchive.Request) {
	if r.Phase != string(contract.Formal) || !r.Success {
		return
	}
	k.c.Requests++
	if r.EmptyOutput() {
		k.c.Empty++
		return
	}
	if r.OutputChars != nil {
		k.overKnown = true
		if r.OutputTokens > *r.OutputChars+r.ReasoningChars+contract.UsageSlack(r.MaxTokens) {
			k.over++
			return
		}
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
func (k *Counter) Counts() report.OutputCounts {
	c := k.c
	c.IgnoreEOS = k.IgnoreEOS
	if k.hashKnown {
		c.Repeated = new(k.repeated)
	}
	if k.shortKnown {
		c.Short = new(k.short)
	}
	if k.overKnown {
		c.TokensOverText = new(k.over)
	}
	return c
}

// ReadRequests counts the suspicious outputs of the bench run in r, from
// its requests.jsonl, with its manifest's ignore_eos (unknown without a
// manifest). Errors name the file and line.
func ReadRequests(r *runarchive.Run) (report.OutputCounts, error) {
	var k Counter
	m, err := r.ReadManifest()
	switch {
	case errors.Is(err, runarchive.ErrNoManifest):
	case err != nil:
		return report.OutputCounts{}, err
	default:
		k.IgnoreEOS = m.IgnoreEOS()
	}
	err = r.EachRequest(func(_ int, req *runarchive.Request) error {
		k.Add(req)
		return nil
	})
	if err != nil {
		return report.OutputCounts{}, err
	}
	return k.Counts(), nil
}

// Format prints the counts as "empty/repeated/short of n", "-" for an
// unknown count or a run without an archive (c nil).
func Format(c *report.OutputCounts) string {
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
func Sum(cs []report.OutputCounts) report.OutputCounts {
	var out report.OutputCounts
	if len(cs) == 0 {
		return out
	}
	repeated, short, over := 0, 0, 0
	repeatedKnown, shortKnown, overKnown := true, true, true
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
		if c.TokensOverText == nil {
			overKnown = false
		} else {
			over += *c.TokensOverText
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
	if overKnown {
		out.TokensOverText = &over
	}
	return out
}
