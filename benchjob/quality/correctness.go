package quality

import (
	"math/rand/v2"
	"strconv"
	"strings"
)

var (
	ones = []string{"zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
		"eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen"}
	tens   = []string{"", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"}
	scales = []struct {
		v    int
		name string
	}{{1_000_000_000, "billion"}, {1_000_000, "million"}, {1000, "thousand"}}
)

// Words spells n (0 ≤ n < 10¹²) in English words, as num2words does for
// LLMPerf's correctness test: 12345 → "twelve thousand, three hundred and
// forty-five".
func Words(n int) string {
	if n == 0 {
		return ones[0]
	}
	var parts []string
	for _, s := range scales {
		if n >= s.v {
			parts = append(parts, below1000(n/s.v, false)+" "+s.name)
			n %= s.v
		}
	}
	if n > 0 {
		parts = append(parts, below1000(n, len(parts) > 0))
	}
	return strings.Join(parts, ", ")
}

// below1000 spells 1 ≤ n < 1000; and adds the British "and" before a last
// group under 100 that follows a larger group.
func below1000(n int, and bool) string {
	var b strings.Builder
	if n >= 100 {
		b.WriteString(ones[n/100] + " hundred")
		n %= 100
		if n > 0 {
			b.WriteString(" and ")
		}
	} else if and && n > 0 {
		b.WriteString("and ")
	}
	switch {
	case n == 0:
	case n < 20:
		b.WriteString(ones[n])
	default:
		b.WriteString(tens[n/10])
		if n%10 > 0 {
			b.WriteString("-" + ones[n%10])
		}
	}
	return b.String()
}

// CorrectnessPrompt is prompt i of the correctness workload: a random
// number between 10⁴ and 10⁸ spelled out, to be answered in digits. The
// same seed and i give the same prompt.
func CorrectnessPrompt(seed int64, i int) (text string, check *Check) {
	rng := rand.New(rand.NewPCG(uint64(seed), uint64(i)))
	n := 10_000 + rng.IntN(100_000_000-10_000)
	text = "Convert the following sequence of words into a number: " + Words(n) + ". Output just your final answer."
	return text, &Check{Expect: strconv.Itoa(n)}
}
