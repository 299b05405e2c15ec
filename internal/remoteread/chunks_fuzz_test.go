package remoteread

import (
	"testing"

	"github.com/prometheus/prometheus/prompb"
)

// FuzzAppendChunks: whatever chunk bytes and encoding a server sends,
// appendChunks returns samples or an error, never panics, and makes room
// ahead for no more samples than the bytes could hold.
func FuzzAppendChunks(f *testing.F) {
	f.Add(xorChunk(f, 5), uint8(prompb.Chunk_XOR))
	f.Add([]byte{}, uint8(prompb.Chunk_XOR))
	f.Add([]byte{0xff}, uint8(prompb.Chunk_XOR))
	f.Add([]byte{0xff, 0xff, 1, 2, 3}, uint8(prompb.Chunk_XOR))
	f.Add([]byte{0, 3, 1, 2, 3}, uint8(prompb.Chunk_HISTOGRAM))
	f.Fuzz(func(t *testing.T, data []byte, typ uint8) {
		c := prompb.Chunk{MinTimeMs: 0, MaxTimeMs: 100, Type: prompb.Chunk_Encoding(typ), Data: data}
		pairs, _, err := appendChunks(nil, []prompb.Chunk{c}, nil, -1, 100)
		// The room made ahead, rounded up to an allocation size class, or
		// what appending the samples read grew it to.
		limit := max((4*len(data)+2)*9/8+8, 3*len(pairs)+16)
		if err == nil && cap(pairs) > limit {
			t.Errorf("%d bytes: room for %d samples made, %d read", len(data), cap(pairs), len(pairs))
		}
	})
}
