package simengine

import "strings"

// The simulator's tokenizer is one token per whitespace-separated word, and
// every generated token is one word with a leading space, so a completion fed
// back as a prompt counts the same number of tokens.

// vocab is the generated words.
var vocab = [...]string{
	"the", "energy", "of", "a", "token", "is", "measured", "at", "board",
	"power", "over", "time", "while", "requests", "stream", "from", "an",
	"engine", "that", "batches", "sequences", "and", "decodes", "one", "step",
	"per", "iteration", "with", "cache", "memory", "in", "use", "so", "each",
	"joule", "counts", "toward", "work", "done", "by", "GPU", "when", "load",
	"rises", "falls", "back", "to", "idle", "baseline", "after", "release",
	"warm", "formal", "phase", "steady", "state", "window", "latency",
	"throughput", "goodput", "prompt", "output", "model", "weights",
}

// promptTokens counts the tokens of a completion prompt.
func promptTokens(s string) int { return len(strings.Fields(s)) }

// chatTemplateTokens is what the simulated chat template adds per message
// (role markers and separators).
const chatTemplateTokens = 4

// tokenText is token i of the sequence seeded with seed.
func tokenText(seed uint64, i int) string {
	return " " + vocab[splitmix64(seed+uint64(i)*0x9e3779b97f4a7c15)%uint64(len(vocab))]
}

// splitmix64 is a fast, well-mixed hash of x.
func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}
