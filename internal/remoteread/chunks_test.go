package remoteread

import (
	"math"
	"slices"
	"testing"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/prompb"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/prometheus/prometheus/tsdb/chunks"
)

// TestAppendChunksAsIterator decodes chunks one by one as the series
// iterator reads them: the same samples for windows whose edges fall
// before, inside, between and after the chunks, staleness markers dropped.
func TestAppendChunksAsIterator(t *testing.T) {
	var all []chunks.Sample
	var pb []prompb.Chunk
	for c := range 4 {
		chk := chunkenc.NewXORChunk()
		app, err := chk.Appender()
		if err != nil {
			t.Fatal(err)
		}
		first := int64(c * 1000)
		for k := range 50 {
			ts, v := first+int64(k)*10, float64(c*100+k)
			if k == 7 {
				v = math.Float64frombits(value.StaleNaN)
			}
			app.Append(0, ts, v)
			all = append(all, sample{ts, v})
		}
		pb = append(pb, prompb.Chunk{MinTimeMs: first, MaxTimeMs: first + 490, Type: prompb.Chunk_XOR, Data: chk.Bytes()})
	}
	series := storage.NewListSeries(labels.FromStrings("__name__", "m"), all)
	for _, w := range [][2]int64{{-1, 5000}, {0, 490}, {100, 2200}, {490, 1000}, {495, 999}, {2490, 2500}, {3000, 3000}, {6000, 7000}} {
		got, _, err := appendChunks(nil, pb, nil, w[0], w[1])
		if err != nil {
			t.Fatal(err)
		}
		want, _, err := appendSeries(nil, series, nil, w[0], w[1])
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("window %v: chunks %v, iterator %v", w, got, want)
		}
	}
	if _, _, err := appendChunks(nil, []prompb.Chunk{{MaxTimeMs: 10, Type: 99, Data: []byte{1}}}, nil, 0, 10); err == nil {
		t.Fatal("an unknown chunk encoding read without an error")
	}
}

type sample struct {
	t int64
	f float64
}

func (s sample) T() int64                      { return s.t }
func (s sample) ST() int64                     { return 0 }
func (s sample) F() float64                    { return s.f }
func (s sample) H() *histogram.Histogram       { return nil }
func (s sample) FH() *histogram.FloatHistogram { return nil }
func (s sample) Type() chunkenc.ValueType      { return chunkenc.ValFloat }
func (s sample) Copy() chunks.Sample           { return s }

// TestAppendChunksPresizeBounded: appendChunks makes room ahead for the
// samples a chunk's header announces only as far as its bytes could hold
// them: a header claiming 65,535 samples in a chunk of three costs no
// more, and the chunk reads as it would have.
func TestAppendChunksPresizeBounded(t *testing.T) {
	data := xorChunk(t, 3)
	honest := []prompb.Chunk{{MinTimeMs: 0, MaxTimeMs: 20, Type: prompb.Chunk_XOR, Data: data}}
	got, _, err := appendChunks(nil, honest, nil, -1, 100)
	if err != nil || len(got) != 3 || cap(got) != 3 {
		t.Fatalf("honest header: %d samples, room for %d (%v), want 3 and 3", len(got), cap(got), err)
	}
	forged := slices.Clone(data)
	forged[0], forged[1] = 0xff, 0xff // the sample count, big-endian
	pairs, _, _ := appendChunks(make([]model.SamplePair, 0), []prompb.Chunk{{MinTimeMs: 0, MaxTimeMs: 20, Type: prompb.Chunk_XOR, Data: forged}}, nil, -1, 100)
	if limit := 4*len(forged) + 2; cap(pairs) > limit+8 {
		t.Errorf("forged header: room for %d samples made, want at most about %d", cap(pairs), limit)
	}
}

// xorChunk is the bytes of an XOR chunk of n samples: value k at k·10 ms.
func xorChunk(tb testing.TB, n int) []byte {
	chk := chunkenc.NewXORChunk()
	app, err := chk.Appender()
	if err != nil {
		tb.Fatal(err)
	}
	for k := range n {
		app.Append(0, int64(k)*10, float64(k))
	}
	return slices.Clone(chk.Bytes())
}
