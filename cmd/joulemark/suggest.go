package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/alecthomas/kong"
)

// visibleSuggestion rewrites kong's "unknown flag --x, did you mean ..."
// so that it only ever suggests flags the help shows: kong's candidates
// include hidden flags, which the help does not show and a typo should
// not be steered to.
func visibleSuggestion(kctx *kong.Context, err error) error {
	msg := err.Error()
	const unknown = "unknown flag "
	if kctx == nil || !strings.HasPrefix(msg, unknown) {
		return err
	}
	name := strings.TrimPrefix(msg, unknown)
	if i := strings.Index(name, ","); i >= 0 {
		name = name[:i]
	}
	var near []string
	for _, f := range kctx.Flags() {
		if f.Hidden {
			continue
		}
		cand := "--" + f.Name
		if strings.HasPrefix(cand, name) || levenshtein(cand, name) <= 2 {
			near = append(near, fmt.Sprintf("%q", cand))
		}
	}
	switch len(near) {
	case 0:
		return errors.New(unknown + name)
	case 1:
		return fmt.Errorf("%s%s, did you mean %s?", unknown, name, near[0])
	}
	return fmt.Errorf("%s%s, did you mean one of %s?", unknown, name, strings.Join(near, ", "))
}

// levenshtein is the edit distance of a and b (runes).
func levenshtein(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur := make([]int, len(rb)+1)
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(rb)]
}
