package benchjob

import (
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/joulemark/joulemark/internal/testkit/golden"
)

func TestSyntheticDeterministic(t *testing.T) {
	w := Defaults().Workload
	w.Seed = 42
	a, b := newSynthetic(w), newSynthetic(w)
	w.Seed = 43
	c := newSynthetic(w)
	differs := false
	for i := 0; i < 50; i++ {
		pa, pb, pc := a.prompt(i), b.prompt(i), c.prompt(i)
		if pa != pb {
			t.Fatalf("prompt %d differs with the same seed", i)
		}
		if pa != pc {
			differs = true
		}
	}
	if !differs {
		t.Error("another seed gives the same prompts")
	}
}

func TestSyntheticLengths(t *testing.T) {
	w := Workload{MeanInputTokens: 550, StddevInputTokens: 150, MeanOutputTokens: 150, StddevOutputTokens: 10, Seed: 1}
	g := newSynthetic(w)
	const n = 2000
	var sumIn, sumIn2, sumOut float64
	for i := 0; i < n; i++ {
		p := g.prompt(i)
		if !strings.HasPrefix(p.Text, "Randomly stream lines from the following text with "+strconv.Itoa(p.MaxTokens)+" output tokens") {
			t.Fatalf("prompt %d instruction: %q", i, p.Text[:80])
		}
		// The text lands on the estimated length (within one line's cut).
		if est := estimateTokens(p.Text); est > p.InputTokens+1 || est < p.InputTokens-15 {
			t.Fatalf("prompt %d: %d tokens estimated, %d wanted", i, est, p.InputTokens)
		}
		sumIn += float64(p.InputTokens)
		sumIn2 += float64(p.InputTokens * p.InputTokens)
		sumOut += float64(p.MaxTokens)
	}
	mean := sumIn / n
	sd := math.Sqrt(sumIn2/n - mean*mean)
	if math.Abs(mean-550) > 15 || math.Abs(sd-150) > 15 || math.Abs(sumOut/n-150) > 2 {
		t.Errorf("input mean %.1f sd %.1f, output mean %.1f", mean, sd, sumOut/n)
	}
	// Zero deviation: every length is the mean.
	g = newSynthetic(Workload{MeanInputTokens: 100, MeanOutputTokens: 20})
	for i := 0; i < 10; i++ {
		if p := g.prompt(i); p.InputTokens != 100 || p.MaxTokens != 20 {
			t.Fatalf("fixed lengths: %d/%d", p.InputTokens, p.MaxTokens)
		}
	}
}

func TestSourceDigest(t *testing.T) {
	w := Workload{MeanInputTokens: 50, MeanOutputTokens: 5, Seed: 3}
	s1, s2 := newSource(newSynthetic(w).prompt, -1), newSource(newSynthetic(w).prompt, -1)
	for i := 0; i < 5; i++ {
		p1, _ := s1.take()
		p2, _ := s2.take()
		if p1.Index != i || p2.Index != i {
			t.Fatal("indexes out of order")
		}
	}
	d1, n1 := s1.digest()
	d2, _ := s2.digest()
	if d1 != d2 || n1 != 5 || len(d1) != 64 {
		t.Errorf("digests %s %s n %d", d1, d2, n1)
	}
	s1.take()
	if d3, _ := s1.digest(); d3 == d1 {
		t.Error("digest unchanged by another prompt")
	}
	fin := newSource(func(int) Prompt { return Prompt{Text: "x"} }, 2)
	fin.take()
	fin.take()
	if _, ok := fin.take(); ok {
		t.Error("finite source did not run out")
	}
}

func TestLoadDataset(t *testing.T) {
	ps, err := loadDataset(filepath.Join("testdata", "dataset.jsonl"), 9)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		text string
		max  int
	}{{"Tell me about the sea.", 5}, {"Name three colours.", 9}, {"What is energy?", estimateTokens("Energy is the capacity to do work.")}}
	if len(ps) != len(want) {
		t.Fatalf("%d prompts", len(ps))
	}
	for i, w := range want {
		if ps[i].Text != w.text || ps[i].MaxTokens != w.max || ps[i].InputTokens == 0 {
			t.Errorf("prompt %d = %+v, want %+v", i, ps[i], w)
		}
	}
	ps, err = loadDataset(filepath.Join("testdata", "sharegpt.json"), 9)
	if err != nil || len(ps) != 2 || ps[0].Text != "Hello there" || ps[1].Text != "Count to three" {
		t.Fatalf("sharegpt: %+v %v", ps, err)
	}
}

func TestLoadBadFiles(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		if err := osWriteFile(p, s); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tests := []struct {
		name string
		load func() error
		want []string
	}{
		{"dataset bad json", func() error { _, err := loadDataset(filepath.Join("testdata", "bad_dataset.jsonl"), 1); return err }, []string{"bad_dataset.jsonl", "line 2"}},
		{"dataset no prompt", func() error { _, err := loadDataset(write("np.jsonl", `{"text":"x"}`+"\n"), 1); return err }, []string{"line 1", "no prompt"}},
		{"dataset bad max_tokens", func() error {
			_, err := loadDataset(write("mt.jsonl", `{"prompt":"x","max_tokens":0}`+"\n"), 1)
			return err
		}, []string{"line 1", "max_tokens 0"}},
		{"dataset empty", func() error { _, err := loadDataset(write("e.jsonl", "\n\n"), 1); return err }, []string{"no entries"}},
		{"dataset missing", func() error { _, err := loadDataset(filepath.Join(dir, "nope"), 1); return err }, []string{"dataset", "nope"}},
		{"trace backwards", func() error { _, err := loadTrace(filepath.Join("testdata", "bad_trace.jsonl")); return err }, []string{"line 2", "goes back"}},
		{"trace no time", func() error {
			_, err := loadTrace(write("nt.jsonl", `{"input_tokens":1,"output_tokens":1}`+"\n"))
			return err
		}, []string{"line 1", "no arrival time"}},
		{"trace no lengths", func() error { _, err := loadTrace(write("nl.jsonl", `{"time":1}`+"\n")); return err }, []string{"line 1", "input_tokens"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.load()
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

func TestLoadTrace(t *testing.T) {
	tr, err := loadTrace(filepath.Join("testdata", "trace.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if len(tr) != 4 || tr[1].At != 50*time.Millisecond || tr[3].At != 200*time.Millisecond || tr[2].InputTokens != 10 || tr[2].OutputTokens != 5 {
		t.Errorf("trace %+v", tr)
	}
	mc, err := loadTrace(filepath.Join("testdata", "mooncake.jsonl"))
	if err != nil || len(mc) != 2 || mc[0].At != 0 || mc[1].At != 250*time.Millisecond || mc[0].InputTokens != 100 || mc[1].OutputTokens != 3 {
		t.Errorf("mooncake %+v %v", mc, err)
	}
}

func osWriteFile(p, s string) error { return os.WriteFile(p, []byte(s), 0o644) }

// TestSyntheticGolden pins the prompt set of the defaults with seed 1: a
// change to the generator changes every run's prompt_set_sha256 and must be
// deliberate (go test -update).
func TestSyntheticGolden(t *testing.T) {
	w := Defaults().Workload
	w.Seed = 1
	src := newSource(newSynthetic(w).prompt, -1)
	first, _ := src.take()
	for i := 1; i < 100; i++ {
		src.take()
	}
	d, _ := src.digest()
	got := d + "\n" + first.Text[:200] + "\n"
	golden.Compare(t, "synthetic_seed1.golden", []byte(got))
}

// TestLoadTraceBounds: an arrival that is not finite or lies beyond
// MaxTraceSpan after the first, and token counts above
// contract.MaxRequestTokens, are refused naming the line.
func TestLoadTraceBounds(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{
		"far":    `{"time": 0, "input_tokens": 1, "output_tokens": 1}` + "\n" + `{"time": 1e300, "input_tokens": 1, "output_tokens": 1}`,
		"tokens": `{"time": 0, "input_tokens": 100000000, "output_tokens": 1}`,
		"month":  `{"timestamp": 0, "input_length": 1, "output_length": 1}` + "\n" + `{"timestamp": 2.6e12, "input_length": 1, "output_length": 1}`,
	} {
		p := filepath.Join(dir, name)
		if err := osWriteFile(p, body); err != nil {
			t.Fatal(err)
		}
		if _, err := loadTrace(p); err == nil || !strings.Contains(err.Error(), "line ") {
			t.Errorf("trace %s: %v, want an error naming the line", name, err)
		}
	}
}

// TestDatasetBOMAndLongLine: a dataset or trace starting with a UTF-8 byte
// order mark reads as without it; a line over the limit is an error naming
// its line and the limit, not "bufio.Scanner: token too long" (issue 33
// low).
func TestDatasetBOMAndLongLine(t *testing.T) {
	dir := t.TempDir()
	bom := filepath.Join(dir, "bom.jsonl")
	if err := osWriteFile(bom, "\xef\xbb\xbf"+`{"prompt":"hello"}`+"\n"+`{"prompt":"again"}`+"\n"); err != nil {
		t.Fatal(err)
	}
	if ps, err := loadDataset(bom, 3); err != nil || len(ps) != 2 || ps[0].Text != "hello" {
		t.Errorf("dataset with a BOM: %+v, %v", ps, err)
	}
	tr := filepath.Join(dir, "bom_trace.jsonl")
	if err := osWriteFile(tr, "\xef\xbb\xbf"+`{"time":0,"input_tokens":1,"output_tokens":1}`+"\n"); err != nil {
		t.Fatal(err)
	}
	if got, err := loadTrace(tr); err != nil || len(got) != 1 {
		t.Errorf("trace with a BOM: %+v, %v", got, err)
	}
	long := filepath.Join(dir, "long.jsonl")
	if err := osWriteFile(long, `{"time":0,"input_tokens":1,"output_tokens":1}`+"\n"+`{"prompt":"`+strings.Repeat("x", MaxTraceLine)+`"}`+"\n"); err != nil {
		t.Fatal(err)
	}
	_, err := loadTrace(long)
	if err == nil || !strings.Contains(err.Error(), "line 2") || !strings.Contains(err.Error(), "longer than 16 MiB") {
		t.Errorf("long trace line: %v; want line 2 and the limit named", err)
	}
}

// TestShuffleIsRandShuffle: the synthetic generator's shuffle leaves the
// order and the source's state as rand.Shuffle does.
func TestShuffleIsRandShuffle(t *testing.T) {
	for seed := range uint64(50) {
		g := newSynthetic(Workload{Seed: int64(seed)})
		ref := rand.New(rand.NewPCG(seed, 0x6a6f756c656d))
		for _, n := range []int{0, 1, 2, 3, 64, 168, 1000} {
			got, want := make([]int, n), make([]int, n)
			for i := range n {
				got[i], want[i] = i, i
			}
			g.shuffle(got)
			ref.Shuffle(n, func(i, j int) { want[i], want[j] = want[j], want[i] })
			if !slices.Equal(got, want) {
				t.Fatalf("seed %d, %d lines: %v, rand.Shuffle %v", seed, n, got, want)
			}
		}
		if a, b := g.rng.Uint64(), ref.Uint64(); a != b {
			t.Fatalf("seed %d: the sources part (%d, %d)", seed, a, b)
		}
	}
}
