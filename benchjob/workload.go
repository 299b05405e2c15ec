package benchjob

import (
	"crypto/sha256"
	_ "embed"
	"encoding/binary"
	"hash"
	"math"
	"math/bits"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/joulemark/joulemark/benchjob/quality"
)

// Shakespeare's sonnets (public domain), the text LLMPerf shuffles into its
// synthetic prompts.
//
//go:embed corpus/sonnets.txt
var sonnets string

var sonnetLines = func() []string {
	var out []string
	for _, l := range strings.Split(sonnets, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}()

// Prompt is one request's input.
type Prompt struct {
	Index int
	Text  string
	// InputTokens is the intended prompt length (synthetic and trace
	// prompts: an estimate at 4 characters per token), 0 when unknown.
	InputTokens int
	// MaxTokens is the max_tokens sent; 0 sends none.
	MaxTokens int
	// Check is the answer's quality rubric (correctness workload or
	// workload.quality_file); nil: not checked.
	Check *quality.Check
}

// estimateTokens is the length estimate used to size synthetic prompts: 4
// characters per token, the usual rule of thumb for English BPE
// vocabularies. The API-reported usage is what the run records.
func estimateTokens(s string) int { return (len(s) + 3) / 4 }

// source hands out prompts in index order; it is safe for concurrent use and
// deterministic: prompt i is the same for the same config and seed.
type source struct {
	mu   sync.Mutex
	next int
	gen  func(i int) Prompt
	sum  hash.Hash
	buf  []byte // what take hashes
	// limit is the number of prompts the source has (datasets cycle; traces
	// end): -1 for unlimited.
	limit int
}

func newSource(gen func(int) Prompt, limit int) *source {
	return &source{gen: gen, sum: sha256.New(), limit: limit}
}

// take returns the next prompt, or false when a finite source ran out.
func (s *source) take() (Prompt, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.limit >= 0 && s.next >= s.limit {
		return Prompt{}, false
	}
	p := s.gen(s.next)
	p.Index = s.next
	s.next++
	// One write of the lengths and the text, through a reused buffer.
	s.buf = binary.LittleEndian.AppendUint64(s.buf[:0], uint64(p.MaxTokens))
	s.buf = binary.LittleEndian.AppendUint64(s.buf, uint64(len(p.Text)))
	s.buf = append(s.buf, p.Text...)
	s.sum.Write(s.buf)
	return p, true
}

// digest is the SHA-256 of every prompt handed out so far (lengths, max
// tokens and text, in order), and their count.
func (s *source) digest() (string, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return hexSum(s.sum), s.next
}

// synthetic is the LLMPerf-style generator: an instruction plus shuffled
// sonnet lines up to a gaussian input length, and a gaussian output length.
type synthetic struct {
	rng           *rand.Rand
	pcg           *rand.PCG // rng's source
	in, out       distuv.Normal
	meanIn, meanO int
	perm          []int // reused line order
}

func newSynthetic(w Workload) *synthetic {
	pcg := rand.NewPCG(uint64(w.Seed), 0x6a6f756c656d) // "joulemark"
	rng := rand.New(pcg)
	return &synthetic{
		rng: rng, pcg: pcg,
		in:     distuv.Normal{Mu: float64(w.MeanInputTokens), Sigma: float64(w.StddevInputTokens), Src: rng},
		out:    distuv.Normal{Mu: float64(w.MeanOutputTokens), Sigma: float64(w.StddevOutputTokens), Src: rng},
		meanIn: w.MeanInputTokens, meanO: w.MeanOutputTokens,
	}
}

func draw(d distuv.Normal) int {
	v := d.Mu
	if d.Sigma > 0 {
		v = d.Rand()
	}
	return max(1, int(math.Round(v)))
}

// prompt draws the next prompt's lengths and builds it.
func (g *synthetic) prompt(int) Prompt {
	in := draw(g.in)
	out := draw(g.out)
	return Prompt{Text: g.build(in, out), InputTokens: in, MaxTokens: out}
}

// build returns a prompt of about in tokens asking for out tokens.
func (g *synthetic) build(in, out int) string {
	var b strings.Builder
	b.Grow(in*4 + 64)
	b.WriteString("Randomly stream lines from the following text with ")
	b.WriteString(strconv.Itoa(out))
	b.WriteString(" output tokens. Don't generate eos tokens:\n\n")
	want := in * 4
	if g.perm == nil {
		g.perm = make([]int, len(sonnetLines))
	}
	perm := g.perm
	for i := range perm {
		perm[i] = i
	}
	g.shuffle(perm)
	for k := 0; b.Len() < want; k++ {
		line := sonnetLines[perm[k%len(perm)]]
		if rest := want - b.Len(); len(line)+1 > rest {
			// Cut the last line at a word boundary to land on the length.
			cut := line
			if rest > 0 && rest < len(line) {
				cut = line[:rest]
				if i := strings.LastIndexByte(cut, ' '); i > 0 {
					cut = cut[:i]
				}
			}
			b.WriteString(cut)
			break
		}
		b.WriteString(line)
		b.WriteByte('\n')
	}
	return b.String()
}

// shuffle is rand.Shuffle on g.rng: the same Fisher-Yates and the same
// draws (Rand.Uint64N's), with the source's Uint64 called directly, no
// call per swap. On 32-bit platforms, where Uint64N draws differently,
// it calls Uint64N.
func (g *synthetic) shuffle(perm []int) {
	for i := len(perm) - 1; i > 0; i-- {
		n := uint64(i + 1)
		var j uint64
		switch {
		case bits.UintSize == 32:
			j = g.rng.Uint64N(n)
		case n&(n-1) == 0:
			j = g.pcg.Uint64() & (n - 1)
		default:
			// Lemire's multiply and reject, as Rand.uint64n.
			hi, lo := bits.Mul64(g.pcg.Uint64(), n)
			if lo < n {
				for thresh := -n % n; lo < thresh; {
					hi, lo = bits.Mul64(g.pcg.Uint64(), n)
				}
			}
			j = hi
		}
		perm[i], perm[j] = perm[j], perm[i]
	}
}
